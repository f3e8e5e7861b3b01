// Query playground: ask a run a question and see the answer, the ranked evidence with each signal's share of its
// score, and which evidence the answer cites.
import { useState } from "preact/hooks";
import { postV2 } from "../api";
import { messageOf } from "../components/async";
import { Badge, TypeBadge } from "../components/badge";
import { Bar, BarRows, type BarRow } from "../components/bar";
import { ProvenanceChips } from "../components/provenance";
import { RunPicker } from "../components/run-picker";
import { fixed, percent } from "../format";
import type { Evidence, QueryResponse } from "../types";

/** The fusion signals `explain` breaks a score into; each contributes weight × signal score. */
const SIGNALS = [
  { key: "semantic", score: (e: Evidence) => e.explain_info?.semantic_score ?? 0, tone: "semantic" },
  { key: "lexical", score: (e: Evidence) => e.explain_info?.lexical_score ?? 0, tone: "lexical" },
  { key: "recency", score: (e: Evidence) => e.explain_info?.recency_score ?? 0, tone: "recency" },
] as const;

export function contributions(evidence: Evidence): BarRow[] {
  const weights = evidence.explain_info?.fusion_weights_used ?? {};
  return SIGNALS.filter((signal) => weights[signal.key] !== undefined).map((signal) => {
    const weight = weights[signal.key] ?? 0;
    const score = signal.score(evidence);
    return { name: signal.key, value: weight * score, tone: signal.tone, detail: `${fixed(weight, 2)} × ${fixed(score)}` };
  });
}

export function QueryPage() {
  const [runId, setRunId] = useState("");
  const [question, setQuestion] = useState("");
  const [result, setResult] = useState<QueryResponse | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  async function ask(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError("");
    try {
      setResult(await postV2<QueryResponse>("control/query", { run_id: runId, query: question, explain: true, limit: 10 }));
    } catch (e: unknown) {
      setResult(null);
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="page" aria-labelledby="query-title">
      <header class="page-head">
        <h1 id="query-title">Query playground</h1>
        <p class="muted">Ask a run a question; see what answered it and why each piece of evidence ranked where it did.</p>
      </header>
      <form class="card form-row" onSubmit={ask} aria-label="Query">
        <RunPicker value={runId} onChange={setRunId} />
        <label class="field grow">
          <span>Question</span>
          <input name="query" required value={question} onInput={(e) => setQuestion(e.currentTarget.value)} placeholder="What did we learn about…" />
        </label>
        <button type="submit" class="primary" disabled={busy || !runId}>
          {busy ? "Asking…" : "Ask"}
        </button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {result && <QueryResult result={result} />}
    </section>
  );
}

function QueryResult({ result }: { result: QueryResponse }) {
  const cited = new Map(result.citations.map((index, order) => [index, order + 1]));
  const rows = result.evidence.map(contributions);
  const most = Math.max(1e-9, ...result.evidence.map((e) => e.score), ...rows.flat().map((row) => row.value));
  return (
    <>
      <article class="card answer" aria-label="Answer">
        <div class="card-head">
          <h2>Answer</h2>
          <Badge text={result.mode} tone="muted" />
          {result.degraded && <Badge text="degraded" tone="warn" />}
          <span class="confidence">
            confidence <Bar value={result.confidence} max={1} tone="good" label={`confidence ${percent(result.confidence)}`} /> {percent(result.confidence)}
          </span>
        </div>
        <p class="answer-text">
          {result.final_answer || <span class="muted">No answer: the evidence did not support one.</span>}
          {result.citations.map((index, order) => (
            <button type="button" class="cite" key={index} onClick={() => document.getElementById(`evidence-${index}`)?.scrollIntoView({ behavior: "smooth" })}>
              [{order + 1}]
            </button>
          ))}
        </p>
        {result.routing_summary && <p class="muted small">{result.routing_summary}</p>}
      </article>
      <article class="card" aria-label="Evidence">
        <div class="card-head">
          <h2>Evidence</h2>
          <span class="legend">
            {SIGNALS.map((signal) => (
              <span key={signal.key} class={`legend-item tone-${signal.tone}`}>
                {signal.key}
              </span>
            ))}
          </span>
        </div>
        {result.evidence.length === 0 ? (
          <p class="muted empty">No evidence matched.</p>
        ) : (
          <ol class="evidence-list">
            {result.evidence.map((evidence, index) => {
              const citation = cited.get(index);
              const parts = rows[index] ?? [];
              return (
                <li key={evidence.id} id={`evidence-${index}`} class={`evidence${citation ? " cited" : ""}${evidence.is_stale ? " stale" : ""}`}>
                  <div class="evidence-head">
                    <span class="rank">#{index + 1}</span>
                    {citation && <span class="badge tone-good cited-badge">cited [{citation}]</span>}
                    <TypeBadge type={evidence.origin_entry_type} />
                    <Badge text={evidence.retrieval_mode} tone="muted" />
                    {evidence.is_stale && <Badge text="stale" tone="warn" />}
                    {evidence.agent_id && <span class="agent-chip">{evidence.agent_id}</span>}
                    <ProvenanceChips provenance={evidence.provenance} showAgent={false} />
                    <span class="score">score {fixed(evidence.score)}</span>
                  </div>
                  <p class="evidence-content">{citation ? highlight(evidence.content, result.final_answer) : evidence.content}</p>
                  <div class="signal-bars" aria-label={`Score breakdown of evidence ${index + 1}`}>
                    <BarRows rows={[{ name: "score", value: evidence.score, tone: "total" }, ...parts]} max={most} />
                    {parts.length === 0 && <p class="muted small">No fusion breakdown: the item was overlaid or named, not ranked by relevance.</p>}
                  </div>
                </li>
              );
            })}
          </ol>
        )}
      </article>
    </>
  );
}

/** Marks where the answer's text appears in a cited item, so a reader sees what grounded it. */
function highlight(content: string, answer: string) {
  const needle = answer.trim().replace(/[.!?]+$/, "");
  const at = needle.length >= 8 ? content.toLowerCase().indexOf(needle.toLowerCase()) : -1;
  if (at < 0) return content;
  return (
    <>
      {content.slice(0, at)}
      <mark>{content.slice(at, at + needle.length)}</mark>
      {content.slice(at + needle.length)}
    </>
  );
}
