// Context preview: the block an agent would get for a topic under a token budget, how full the budget is, and which
// items did not fit.
import { useState } from "preact/hooks";
import { postV2 } from "../api";
import { messageOf } from "../components/async";
import { Badge, TypeBadge } from "../components/badge";
import { ProvenanceChips } from "../components/provenance";
import { BarRows, type Tone } from "../components/bar";
import { Gauge } from "../components/gauge";
import { RunPicker } from "../components/run-picker";
import { fixed } from "../format";
import type { ContextResponse, Evidence } from "../types";

interface Preview {
  readonly budgeted: ContextResponse;
  /** Sources an unlimited budget would have included but this one left out, in rank order. */
  readonly dropped: Evidence[];
}

export function ContextPage() {
  const [runId, setRunId] = useState("");
  const [query, setQuery] = useState("");
  const [budget, setBudget] = useState(200);
  const [format, setFormat] = useState("structured");
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  async function assemble(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      const request = { run_id: runId, query, format };
      // The response counts dropped items but does not name them: the same request without a budget does.
      const [budgeted, unlimited] = await Promise.all([
        postV2<ContextResponse>("control/context", { ...request, max_token_budget: budget }),
        postV2<ContextResponse>("control/context", { ...request, max_token_budget: 0 }),
      ]);
      const kept = new Set(budgeted.sources.map((source) => source.id));
      setPreview({ budgeted, dropped: unlimited.sources.filter((source) => !kept.has(source.id)) });
    } catch (e: unknown) {
      setPreview(null);
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="page" aria-labelledby="context-title">
      <header class="page-head">
        <h1 id="context-title">Context preview</h1>
        <p class="muted">The block an agent receives, filled in priority order until the token budget is spent.</p>
      </header>
      <form class="card form-row" onSubmit={assemble} aria-label="Context">
        <RunPicker value={runId} onChange={setRunId} />
        <label class="field grow">
          <span>Topic</span>
          <input name="query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} placeholder="empty: newest items" />
        </label>
        <label class="field">
          <span>Token budget</span>
          <input name="budget" type="number" min={0} step={10} value={budget} onInput={(e) => setBudget(Math.max(0, Number(e.currentTarget.value) || 0))} />
        </label>
        <label class="field">
          <span>Format</span>
          <select value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
            <option value="structured">structured</option>
            <option value="compact">compact</option>
          </select>
        </label>
        <button type="submit" class="primary" disabled={busy || !runId}>
          {busy ? "Assembling…" : "Preview"}
        </button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {preview && <ContextResult preview={preview} />}
    </section>
  );
}

function ContextResult({ preview }: { preview: Preview }) {
  const { budgeted: context, dropped } = preview;
  const sections = context.section_summaries.map((section) => ({
    name: section.section_name.replaceAll("_", " "),
    value: section.estimated_tokens,
    tone: "accent" as Tone,
    detail: `${section.item_count} items`,
  }));
  return (
    <>
      <div class="grid-2">
        <article class="card gauge-card" aria-label="Token budget">
          <Gauge used={context.budget_used} total={context.requested_token_budget} label="Token budget" unit="tokens" />
          <dl class="stats">
            <dt>Candidates considered</dt>
            <dd>{context.evidence_candidates_considered}</dd>
            <dt>Included</dt>
            <dd>{context.sources.length}</dd>
            <dt>Dropped by budget</dt>
            <dd class={context.evidence_dropped_by_budget > 0 ? "warn-text" : ""}>{context.evidence_dropped_by_budget}</dd>
            <dt>Exact references</dt>
            <dd>{context.exact_references_surfaced}</dd>
            <dt>Tokens left</dt>
            <dd>{context.budget_remaining}</dd>
          </dl>
          {context.empty_reason && <Badge text={context.empty_reason} tone="warn" />}
        </article>
        <article class="card" aria-label="Sections">
          <h2>Tokens by section</h2>
          {sections.length === 0 ? <p class="muted empty">No section has content.</p> : <BarRows rows={sections} max={Math.max(1, ...sections.map((s) => s.value))} digits={0} />}
        </article>
      </div>
      <article class="card" aria-label="Context block">
        <h2>Context block</h2>
        {context.context_block ? <pre class="context-block">{context.context_block}</pre> : <p class="muted empty">Empty block.</p>}
      </article>
      <div class="grid-2">
        <SourceList title="Included" sources={context.sources} kind="included" />
        <SourceList title="Dropped by the budget" sources={dropped} kind="dropped" />
      </div>
    </>
  );
}

function SourceList({ title, sources, kind }: { title: string; sources: Evidence[]; kind: "included" | "dropped" }) {
  return (
    <article class={`card sources ${kind}`} aria-label={title}>
      <h2>
        {title} <span class="muted">({sources.length})</span>
      </h2>
      {sources.length === 0 ? (
        <p class="muted empty">{kind === "dropped" ? "Nothing was left out." : "Nothing fitted."}</p>
      ) : (
        <ul class="source-list">
          {sources.map((source) => (
            <li key={source.id} class={`source ${kind}`}>
              <TypeBadge type={source.origin_entry_type} /> <span class="score">{fixed(source.score)}</span>{" "}
              <ProvenanceChips provenance={source.provenance} />
              <p>{source.content}</p>
            </li>
          ))}
        </ul>
      )}
    </article>
  );
}
