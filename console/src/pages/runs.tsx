// Runs: every run of the person, most recently active first, searchable by run id or agent.
import { useEffect, useState } from "preact/hooks";
import { getV2 } from "../api";
import { messageOf } from "../components/async";
import { TypeBadge } from "../components/badge";
import { Table } from "../components/table";
import { Time } from "../components/time";
import { href } from "../router";
import type { ListRunsResponse, RunSummary } from "../types";

const PAGE = 100;

export function RunsPage() {
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [next, setNext] = useState("");
  const [total, setTotal] = useState(0);
  const [error, setError] = useState("");
  const [loading, setLoading] = useState(true);
  const [search, setSearch] = useState("");

  async function load(pageToken: string) {
    setLoading(true);
    try {
      const page = await getV2<ListRunsResponse>("control/runs", { limit: PAGE, page_token: pageToken });
      setRuns((previous) => (pageToken ? [...previous, ...page.runs] : page.runs));
      setNext(page.next_page_token);
      setTotal(page.total_visible);
      setError("");
    } catch (e: unknown) {
      setError(messageOf(e));
    } finally {
      setLoading(false);
    }
  }

  useEffect(() => void load(""), []);

  const words = search.toLowerCase().split(/\s+/).filter((word) => word !== "");
  const shown = runs.filter((run) => {
    const text = [run.run_id, ...run.agent_ids, ...run.linked_run_ids, run.session_phase].join(" ").toLowerCase();
    return words.every((word) => text.includes(word));
  });
  const most = Math.max(1, ...runs.map((run) => run.entry_count));

  return (
    <section class="page" aria-labelledby="runs-title">
      <header class="page-head">
        <h1 id="runs-title">Runs</h1>
        <p class="muted">
          {total} run{total === 1 ? "" : "s"}, most recently active first.
        </p>
      </header>
      <div class="toolbar">
        <input
          type="search"
          class="search"
          placeholder="Search runs, agents, linked runs…"
          aria-label="Search runs"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <Table
        label="Runs"
        rows={shown}
        rowKey={(run) => run.run_id}
        empty={loading ? "Loading…" : words.length ? "No run matches the search." : "No runs yet: write to memory to start one."}
        columns={[
          { header: "Run", cell: (run) => <a href={href("runs", run.run_id)} class="mono">{run.run_id}</a> },
          {
            header: "Entries",
            cell: (run) => (
              <div class="entry-mix" title={Object.entries(run.entry_counts).map(([type, n]) => `${type}: ${n}`).join(", ")}>
                <span class="stack" style={{ width: `${Math.max(4, (run.entry_count / most) * 100)}%` }}>
                  {Object.entries(run.entry_counts).map(([type, n]) => (
                    <span key={type} class={`stack-part type-${type}`} style={{ flexGrow: n }} />
                  ))}
                </span>
                <span class="num">{run.entry_count}</span>
              </div>
            ),
          },
          { header: "Types", cell: (run) => Object.keys(run.entry_counts).map((type) => <TypeBadge key={type} type={type} />) },
          { header: "Agents", cell: (run) => run.agent_ids.join(", ") || <span class="muted">–</span> },
          { header: "Last activity", cell: (run) => <Time iso={run.last_activity_at} /> },
        ]}
      />
      {next && (
        <button type="button" onClick={() => void load(next)} disabled={loading}>
          Load more runs
        </button>
      )}
    </section>
  );
}
