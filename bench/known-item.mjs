// Known-item retrieval on the text agents really write (issue 28): the distinct messages of real coding-agent runs
// (`../shared/data/agent-traces/`: commands, tracebacks, diffs, test logs), ingested into one run; each query is a
// piece of one message as a user would type it back — six consecutive words, a distinctive identifier, an error
// line — and must find a message holding it. Beside an in-process BM25 over the same texts, in the same run.
//
// Usage: node bench/known-item.mjs   (after a build; `make bench-known-item`)
// Env:   BENCH_TRACES    data file (default ../shared/data/agent-traces/swe-traces-dev.jsonl.gz)
//        BENCH_QUERIES   queries per fold and kind (default 300)
//        BENCH_SERVER    compiled server entry (default dist/src/serve.js)
// Writes bench/results/known-item.json.
//
// Folds by repository: `tuning` (astropy, matplotlib, mwaskom, pallets, psf, pylint-dev, pytest-dev) is what the
// tokenizer may be tuned on; `held_out` (pydata, scikit-learn, sphinx-doc, sympy) is looked at only to report. Every
// message of both folds is in the one run, so a query competes with the whole corpus.
//
// A query is kept only when its exact text occurs in at most MAX_HOLDERS messages (a piece that many messages hold
// names none of them); a hit at k is any message holding it among the first k results.
import path from "node:path";
import { ingestAll, post, round, summarize } from "./lib/api.mjs";
import { KINDS, MAX_HOLDERS, TOP_K, TUNING_REPOSITORIES, loadMessages, pickQueries, score } from "./lib/agent-traces.mjs";
import { Bm25, plainTerms } from "./lib/bm25.mjs";
import { machine, writeResults } from "./lib/machine.mjs";
import { ROOT, mintAdminKey, removeDir, startServer, tempDir } from "./lib/server.mjs";

const DATA = path.resolve(ROOT, process.env.BENCH_TRACES ?? "../shared/data/agent-traces/swe-traces-dev.jsonl.gz");
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const RUN_ID = "agent-traces";

const messages = loadMessages(DATA);
const queries = pickQueries(messages, QUERIES);
console.error(`${messages.length} distinct messages, ${queries.length} queries`);

const bm25Started = performance.now();
const bm25 = new Bm25(messages.map((m) => m.text), { tokenize: plainTerms, k1: 1.2, b: 0.75 });
const bm25Latencies = [];
const bm25Ranked = queries.map((q) => {
  const t0 = performance.now();
  const ranked = bm25.search(q.text, TOP_K);
  bm25Latencies.push(performance.now() - t0);
  return ranked;
});
const bm25Ms = performance.now() - bm25Started;

const server = await startServer({ dataDir: tempDir("known-item"), key: mintAdminKey(), readyTimeoutMs: 300_000 });
let engram;
try {
  const items = messages.map((m, i) => ({ item_id: String(i), text: m.text, entry_type: "trace" }));
  const { jobs, totalMs } = await ingestAll(server, RUN_ID, items, { inFlight: 1, timeoutMs: 900_000 });
  const messageOf = new Map();
  for (const job of jobs) for (const trace of job.traces ?? []) for (const write of trace.writes ?? []) if (write.record_id) messageOf.set(write.record_id, Number(trace.item_id));
  const latencies = [];
  const ranked = [];
  for (const q of queries) {
    const t0 = performance.now();
    const res = await post(server, "/v2/control/query", { run_id: RUN_ID, query: q.text, limit: TOP_K });
    latencies.push(performance.now() - t0);
    ranked.push((res.evidence ?? []).map((e) => messageOf.get(e.id)).filter((i) => i !== undefined));
  }
  engram = { ingest_items_per_s: round(messages.length / (totalMs / 1000), 0), query: summarize(latencies), hits: score(queries, ranked) };
} finally {
  await server.stop();
  removeDir(server.dataDir);
}

const results = {
  machine: machine(),
  data: { file: path.relative(ROOT, DATA), messages: messages.length, queries: queries.length, max_holders: MAX_HOLDERS, tuning_repositories: [...TUNING_REPOSITORIES] },
  engram,
  bm25: { build_and_query_ms: round(bm25Ms, 0), query: summarize(bm25Latencies), hits: score(queries, bm25Ranked) },
};
writeResults("known-item", results);
for (const fold of ["tuning", "held_out"]) {
  for (const kind of [...KINDS, "all"]) {
    const e = engram.hits[fold][kind];
    const b = results.bm25.hits[fold][kind];
    console.log(`${fold.padEnd(8)} ${kind.padEnd(10)} n=${String(e.n).padStart(4)}  engram top1 ${e.top1} top10 ${e.top10}   bm25 top1 ${b.top1} top10 ${b.top10}`);
  }
}
console.log(`engram query p50 ${engram.query.p50_ms} ms p99 ${engram.query.p99_ms} ms; ingest ${engram.ingest_items_per_s} items/s`);
