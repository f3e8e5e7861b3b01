// One run: what was written to it (counts by type, the activity timeline), its agents and the handoffs between them.
import { useEffect, useState } from "preact/hooks";
import { postV2 } from "../api";
import { Async, messageOf, useAsync } from "../components/async";
import { Badge, TypeBadge } from "../components/badge";
import { ProvenanceChips } from "../components/provenance";
import { BarRows, type Tone } from "../components/bar";
import { Table } from "../components/table";
import { Time } from "../components/time";
import { href } from "../router";
import type { ActivityEntry, AgentIdentity, Handoff, IngestStats, ListActivityResponse, RetentionPolicy } from "../types";

const ENTRY_TYPES = ["fact", "lesson", "rule", "trace", "working_memory", "archive_block", "checkpoint"];

export function RunDetailPage({ runId }: { runId: string }) {
  return (
    <section class="page" aria-labelledby="run-title">
      <header class="page-head">
        <p class="crumbs">
          <a href={href("runs")}>Runs</a> /
        </p>
        <h1 id="run-title" class="mono">
          {runId}
        </h1>
      </header>
      <div class="grid-2">
        <RunCounts runId={runId} />
        <Agents runId={runId} />
      </div>
      <Retention runId={runId} />
      <Handoffs runId={runId} />
      <Timeline runId={runId} />
    </section>
  );
}

function RunCounts({ runId }: { runId: string }) {
  const stats = useAsync(() => postV2<IngestStats>("control/ingest/stats", { run_id: runId }), [runId]);
  return (
    <article class="card" aria-label="Entries by type">
      <h2>Entries by type</h2>
      <Async state={stats}>
        {(data) => {
          const rows = Object.entries(data.by_type)
            .sort(([, a], [, b]) => b - a)
            .map(([type, n]) => ({ name: type, value: n, tone: "accent" as Tone }));
          return (
            <>
              <p class="big-number">
                {data.total_ingested} <span class="muted">entries, last written <Time iso={data.last_ingest_at} /></span>
              </p>
              <BarRows rows={rows} max={Math.max(1, ...rows.map((row) => row.value))} digits={0} />
            </>
          );
        }}
      </Async>
    </article>
  );
}

/** A retention limit as people read it: whole days, hours or minutes when it is one, else seconds. */
function ageText(seconds: number): string {
  for (const [unit, size] of [["day", 86_400], ["hour", 3_600], ["minute", 60]] as const) {
    if (seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? "" : "s"}`;
  }
  return `${seconds} seconds`;
}

function Retention({ runId }: { runId: string }) {
  const policy = useAsync(() => postV2<{ policy?: RetentionPolicy }>("control/retention/get", { run_id: runId }), [runId]);
  return (
    <article class="card" aria-label="Retention">
      <h2>Retention</h2>
      <Async state={policy}>
        {(data) =>
          data.policy === undefined ? (
            <p class="muted">No retention policy of its own: entries are kept unless the project's or the owner's policy limits them.</p>
          ) : (
            <Table
              label="Retention policy of the run"
              rows={data.policy.rules}
              rowKey={(rule) => rule.entry_type}
              empty="No rule."
              columns={[
                { header: "Entry type", cell: (rule) => <TypeBadge type={rule.entry_type} /> },
                { header: "Kept for", cell: (rule) => ageText(Number(rule.max_age_seconds)) },
              ]}
            />
          )
        }
      </Async>
    </article>
  );
}

function Agents({ runId }: { runId: string }) {
  const agents = useAsync(() => postV2<{ agents: AgentIdentity[] }>("control/agents", { run_id: runId }), [runId]);
  return (
    <article class="card" aria-label="Agents">
      <h2>Agents</h2>
      <Async state={agents}>
        {(data) => (
          <Table
            label="Agents of the run"
            rows={data.agents}
            rowKey={(agent) => agent.agent_id}
            empty="No agent registered in this run."
            columns={[
              { header: "Agent", cell: (agent) => <strong class="mono">{agent.agent_id}</strong> },
              { header: "Role", cell: (agent) => agent.role },
              { header: "Status", cell: (agent) => <Badge text={agent.status} /> },
              { header: "Liveness", cell: (agent) => <Badge text={agent.liveness} /> },
              { header: "Lanes", cell: (agent) => agent.shared_memory_lanes.join(", ") },
              { header: "Heartbeat", cell: (agent) => <Time iso={agent.heartbeat_at} /> },
            ]}
          />
        )}
      </Async>
    </article>
  );
}

function Handoffs({ runId }: { runId: string }) {
  const handoffs = useAsync(() => postV2<{ handoffs: Handoff[] }>("control/handoffs", { run_id: runId, limit: 200 }), [runId]);
  return (
    <article class="card" aria-label="Handoffs">
      <h2>Handoffs</h2>
      <Async state={handoffs}>
        {(data) =>
          data.handoffs.length === 0 ? (
            <p class="muted empty">No handoff in this run.</p>
          ) : (
            <ol class="handoffs">
              {data.handoffs.map((handoff) => (
                <li key={handoff.handoff_id} class="handoff">
                  <div class="handoff-route">
                    <span class="agent-chip">{handoff.from_agent_id}</span>
                    <span class="arrow" aria-label="hands over to">
                      →
                    </span>
                    <span class="agent-chip">{handoff.to_agent_id}</span>
                    <Badge text={handoff.requested_action} tone="muted" />
                    <Badge text={handoff.status} />
                    <span class="muted">
                      task <span class="mono">{handoff.task_id}</span>, <Time iso={handoff.created_at} />
                    </span>
                  </div>
                  <p class="handoff-content">{handoff.content}</p>
                  {handoff.feedback.map((feedback) => (
                    <p key={feedback.feedback_id} class="feedback">
                      <Badge text={feedback.verdict} /> {feedback.from_agent_id}: {feedback.comments}
                    </p>
                  ))}
                </li>
              ))}
            </ol>
          )
        }
      </Async>
    </article>
  );
}

function Timeline({ runId }: { runId: string }) {
  const [entries, setEntries] = useState<ActivityEntry[]>([]);
  const [next, setNext] = useState("");
  const [total, setTotal] = useState(0);
  const [type, setType] = useState("");
  const [error, setError] = useState("");
  const [loading, setLoading] = useState(true);

  async function load(pageToken: string) {
    setLoading(true);
    try {
      const page = await postV2<ListActivityResponse>("control/activity", {
        run_id: runId,
        entry_types: type ? [type] : [],
        sort: "desc",
        limit: 50,
        projection: "compact",
        page_token: pageToken,
      });
      setEntries((previous) => (pageToken ? [...previous, ...page.entries] : page.entries));
      setNext(page.next_page_token);
      setTotal(page.total_visible);
      setError("");
    } catch (e: unknown) {
      setError(messageOf(e));
    } finally {
      setLoading(false);
    }
  }

  useEffect(() => void load(""), [runId, type]);

  return (
    <article class="card" aria-label="Activity timeline">
      <div class="card-head">
        <h2>Activity timeline</h2>
        <label class="field inline">
          <span>Type</span>
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">all types</option>
            {ENTRY_TYPES.map((t) => (
              <option key={t} value={t}>
                {t.replaceAll("_", " ")}
              </option>
            ))}
          </select>
        </label>
        <span class="muted">
          {entries.length} of {total}
        </span>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {entries.length === 0 ? (
        <p class="muted empty">{loading ? "Loading…" : "Nothing written to this run yet."}</p>
      ) : (
        <ol class="timeline">
          {entries.map((entry) => (
            <li key={entry.id} class={`timeline-item type-${entry.entry_type}${entry.is_stale ? " stale" : ""}`}>
              <span class="timeline-dot" aria-hidden="true" />
              <div class="timeline-meta">
                <Time iso={entry.created_at} />
                <TypeBadge type={entry.entry_type} />
                {entry.agent_id && <span class="agent-chip">{entry.agent_id}</span>}
                {entry.lane && <Badge text={`lane ${entry.lane}`} tone="muted" />}
                {entry.is_stale && <Badge text="superseded" tone="muted" />}
                {entry.derived && <Badge text="derived" tone="muted" />}
                <ProvenanceChips provenance={entry.provenance} showAgent={false} />
              </div>
              <p class="timeline-content">{entry.content}</p>
            </li>
          ))}
        </ol>
      )}
      {next && (
        <button type="button" onClick={() => void load(next)} disabled={loading}>
          Load older entries
        </button>
      )}
    </article>
  );
}
