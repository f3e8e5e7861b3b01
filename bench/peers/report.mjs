// The side-by-side table: Engram beside LanceDB per size, the ratio Engram ÷ LanceDB measured in the same run, and
// each of issue 14's targets met (✔) or missed (✘).
const TODAY_RECALL_AT_10 = 68.9;
const MIB_PER_GIB = 1024;
const AT_1M = 1_000_000;

function fmt(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  return typeof x === "number" ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : String(x);
}

const ratio = (a, b) => (typeof a === "number" && typeof b === "number" && b > 0 ? a / b : undefined);
const mark = (met) => (met === undefined ? "" : met ? "✔" : "✘");

/**
 * The targets of one size as rows { metric, engram, lancedb, ratio, target, met }; `met` is undefined where there is
 * no target or a side was not measured.
 */
export function sizeRows(r, concurrency) {
  const e = r.engram;
  const l = r.lancedb;
  const rows = [];
  const add = (metric, get, digits, target, check) => {
    const a = e ? get(e) : undefined;
    const b = l ? get(l) : undefined;
    const q = ratio(a, b);
    rows.push({ metric, engram: fmt(a, digits), lancedb: fmt(b, digits), ratio: q === undefined ? "—" : `${q.toFixed(2)}×`, target: target ?? "", met: check ? check(a, b, q) : undefined });
  };
  const both = (fn) => (a, b, q) => (a === undefined || b === undefined ? undefined : fn(a, b, q));
  const mine = (fn) => (a) => (a === undefined ? undefined : fn(a));
  const small = r.n <= 100_000;
  add("ingest items/s until searchable", (s) => s.ingest?.items_per_s, 0, "≥ 1×", both((a, b) => a >= b));
  add("query p50 ms, 1 client", (s) => s.query_1?.p50_ms, 2);
  add("query p99 ms, 1 client", (s) => s.query_1?.p99_ms, 2, small ? "≤ 0.5×" : r.n >= AT_1M ? "Engram ≤ 50 ms" : "", small ? both((a, b) => a <= b / 2) : r.n >= AT_1M ? mine((a) => a <= 50) : undefined);
  add(`query p50 ms, ${concurrency} clients`, (s) => s.query_concurrent?.p50_ms, 2);
  add(`query p99 ms, ${concurrency} clients`, (s) => s.query_concurrent?.p99_ms, 2, small ? "≤ 0.5×" : "", small ? both((a, b) => a <= b / 2) : undefined);
  add(`queries/s, ${concurrency} clients`, (s) => s.query_concurrent?.queries_per_s, 0);
  add("memory added by the load (ingest), MiB", (s) => s.memory?.added_mib, 0, "≤ 1×", both((a, b) => a <= b));
  add("memory added, after the query series too, MiB", (s) => s.memory?.added_after_queries_mib, 0);
  add("RSS after load and queries, MiB (peak)", (s) => s.memory?.rss_mib_after_queries, 0, r.n >= AT_1M ? "Engram ≤ 2.5 GiB" : "", r.n >= AT_1M ? mine((a) => a <= 2.5 * MIB_PER_GIB) : undefined);
  rows.at(-1).engram += e?.memory ? ` (${fmt(e.memory.peak_rss_mib)})` : "";
  rows.at(-1).lancedb += l?.memory ? ` (${fmt(l.memory.peak_rss_mib)})` : "";
  add("start-up to ready on the data, ms", (s) => s.startup?.ready_ms, 0, r.n >= AT_1M ? "Engram ≤ 15 s" : "", r.n >= AT_1M ? mine((a) => a <= 15_000) : undefined);
  add("disk use, MiB", (s) => s.disk_mib, 1);
  return rows;
}

/** Rows of the shared-vectors run of a size (no targets: the same vectors to both, embedding taken out). */
function sharedRows(r, concurrency) {
  const view = { n: r.n, engram: r.shared?.engram, lancedb: r.shared?.lancedb };
  const keep = new Set(["ingest items/s until searchable", "query p50 ms, 1 client", "query p99 ms, 1 client", `query p99 ms, ${concurrency} clients`, `queries/s, ${concurrency} clients`, "memory added by the load (ingest), MiB"]);
  return sizeRows(view, concurrency)
    .filter((row) => keep.has(row.metric))
    .map((row) => ({ ...row, metric: `shared vectors: ${row.metric}`, target: "", met: undefined }));
}

/** Every target's verdict in the results, as [label, met]. */
export function verdicts(results) {
  const out = [];
  for (const r of results.sizes) {
    for (const row of sizeRows(r, results.settings.concurrency)) if (row.met !== undefined) out.push([`${fmt(r.n)}: ${row.metric} ${row.target}`, row.met]);
  }
  const recall = results.recall?.engram?.recall_at_10;
  if (recall !== undefined) out.push([`LoCoMo recall@10 ≥ today's ${TODAY_RECALL_AT_10}`, recall >= TODAY_RECALL_AT_10]);
  return out;
}

export function table(results) {
  const concurrency = results.settings.concurrency;
  const lines = [];
  const header = ["| metric | Engram | LanceDB | Engram ÷ LanceDB | target | |", "|---|---|---|---|---|---|"];
  const line = (row) => `| ${row.metric} | ${row.engram} | ${row.lancedb} | ${row.ratio} | ${row.target} | ${mark(row.met)} |`;
  for (const r of results.sizes) {
    lines.push(`\n${fmt(r.n)} entries`, ...header);
    for (const row of sizeRows(r, concurrency)) lines.push(line(row));
    if (r.shared?.engram || r.shared?.lancedb) for (const row of sharedRows(r, concurrency)) lines.push(line(row));
    else if (r.shared_status) lines.push(`| shared vectors | ${r.shared_status} | | | | |`);
  }
  const e = results.recall?.engram?.recall_at_10;
  const l = results.recall?.lancedb?.recall_at_10;
  if (e !== undefined || l !== undefined) {
    const q = ratio(e, l);
    lines.push("\nLoCoMo (size-independent)", ...header);
    lines.push(line({ metric: "recall@10, %", engram: fmt(e, 1), lancedb: fmt(l, 1), ratio: q === undefined ? "—" : `${q.toFixed(2)}×`, target: `Engram ≥ ${TODAY_RECALL_AT_10}`, met: e === undefined ? undefined : e >= TODAY_RECALL_AT_10 }));
  }
  return lines.join("\n");
}
