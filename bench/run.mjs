// Speed of the built server at 10k and 100k entries, each figure beside a raw-library baseline measured in the same run.
//
// Usage: make bench   (or: npx tsc -p tsconfig.build.json && node --expose-gc bench/run.mjs)
// Env:   BENCH_SIZES            entry counts, comma-separated (default "10000,100000")
//        BENCH_QUERIES          queries per latency series (default 500)
//        BENCH_CONTEXT_QUERIES  context requests (default 200)
//        BENCH_INGEST_INFLIGHT  ingest requests kept outstanding (default 1: send the next once the last is acked)
//        SERVICE_EMBEDDER       wordvec | hashed: passed to the server, and the embedder of the in-process vector
//                               baselines (default: the compiled config's default); other SERVICE_* pass through too
//        BENCH_SERVER           compiled server entry (default dist/src/serve.js)
//        BENCH_QUIET_WAIT_S     before each phase, wait up to this long for other processes to leave the CPUs
//                               (default 300)
//        BENCH_ATTEMPTS         tries per phase when other processes took > 10 % of the CPUs during it (default 3);
//                               the least disturbed try is kept, and every phase's disturbance is recorded
// Writes bench/results/speed.json. Exit status 0 when every engine figure was measured, 2 when the engine's routes
// are not implemented yet (baselines are still measured and written), 1 on failure.
//
// Per size N, in this order (the server is stopped whenever the bench itself computes, so the two never share the 2
// cores): the corpus and queries; raw lmdb-js writes of the same records; three empty-server start-ups; a fresh
// server loaded with N entries through POST /v2/control/ingest (1000 items a request, until every job completed),
// then left to go idle (background graph indexing); RSS; query latency over HTTP (budgets mid, low, high) and gRPC
// (mid) beside GET /livez and gRPC Livez; context latency; two restarts on the loaded data dir (time to /readyz 200,
// RSS, and on the second a quiet-server query series and a synchronous POST /v2/control/batch_insert series); then
// in-process: the server's embedder over the corpus, exact top-10 per query (JS ground truth; USearch exactSearch as
// the latency baseline), the server's own VectorIndex (compiled module) and raw USearch with the same settings.
import { open } from "lmdb";
import { ApiError, call, implemented, ingestAll, post, round, summarize } from "./lib/api.mjs";
import { Corpus, vocabulary } from "./lib/corpus.mjs";
import { grpcClients } from "./lib/grpc.mjs";
import { MAX_DISTURBANCE_WITH_RESTARTS, disturbed, phaseGuard } from "./lib/guard.mjs";
import { machine, writeResults } from "./lib/machine.mjs";
import { ROOT, diskBytes, mintAdminKey, removeDir, sleep, startServer, tempDir, waitIdle } from "./lib/server.mjs";
import { bruteForceTopK, buildUsearch, embedAll, loadEmbedder, nativeExactSearch, recallAgainst } from "./lib/vectors.mjs";
import { serverVectorIndex } from "./lib/server-index.mjs";
import path from "node:path";

const SIZES = (process.env.BENCH_SIZES ?? "10000,100000").split(",").map((s) => Number(s.trim())).filter((n) => n > 0);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 500);
const CONTEXT_QUERIES = Number(process.env.BENCH_CONTEXT_QUERIES ?? 200);
const INFLIGHT = Number(process.env.BENCH_INGEST_INFLIGHT ?? 1);
const BUDGETS = ["mid", "low", "high"];
const RUN_ID = "bench";
const TOP_K = 10;
const CONTEXT_BUDGET = 2000;
const MIB = 2 ** 20;
const TARGETS = { ingest_items_per_s: 3000, query_p99_ms_at_100k: 15, startup_ms_at_100k: 5000 };

const gc = () => globalThis.gc?.();
const log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Per size: how disturbed each phase was, and how many attempts it took (see "Shared machine" in BENCHMARKS.md). */
const guard = phaseGuard({ log });
const guarded = guard.guarded;

/** Times `fn` over every input sequentially; `warmup` extra calls first. Tolerates a few errors, then gives up. */
async function timeSeries(inputs, fn, { warmup = 20 } = {}) {
  for (let i = 0; i < Math.min(warmup, inputs.length); i++) await fn(inputs[i]);
  const latencies = [];
  const outputs = [];
  let errors = 0;
  let lastError;
  for (const input of inputs) {
    const t0 = performance.now();
    try {
      outputs.push(await fn(input));
      latencies.push(performance.now() - t0);
    } catch (e) {
      errors++;
      lastError = e;
      if (errors > Math.max(10, inputs.length / 10)) throw e;
    }
  }
  return { ...summarize(latencies), errors, last_error: lastError ? String(lastError.message ?? lastError).slice(0, 300) : undefined, outputs };
}

function strip({ outputs: _outputs, ...rest }) {
  return rest;
}

function rawLmdbIngest(items) {
  const dir = tempDir("lmdb");
  const db = open({ path: dir, maxDbs: 4 });
  const entries = db.openDB({ name: "entries" });
  const started = performance.now();
  for (let i = 0; i < items.length; i += 1000) {
    const batch = items.slice(i, i + 1000);
    // One durable (fsync'd) transaction per 1000 records, like one ingest request.
    entries.transactionSync(() => {
      batch.forEach((item, j) => {
        entries.put([RUN_ID, i + j], { run_id: RUN_ID, entry_type: item.entry_type, content: item.text, occurrence_time: item.occurrence_time, metadata_json: item.metadata_json, created_at: Date.now() });
      });
    });
  }
  const ms = performance.now() - started;
  db.close();
  const bytes = diskBytes(dir);
  removeDir(dir);
  return { items_per_s: round((items.length / ms) * 1000, 0), total_ms: round(ms), disk_mib: round(bytes / MIB) };
}

async function emptyStarts(times) {
  const ready = [];
  const rss = [];
  for (let i = 0; i < times; i++) {
    const dir = tempDir("empty");
    const server = await startServer({ dataDir: dir, key: mintAdminKey() });
    await sleep(200);
    ready.push(server.readyMs);
    rss.push(server.rss());
    await server.stop();
    removeDir(dir);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { ready_ms_each: ready.map((x) => round(x)), ready_ms: round(median(ready)), rss_mib: round(median(rss) / MIB) };
}

async function queryPhase(server, queries, n) {
  const out = {};
  const query = (budget) => (q) => post(server, "/v2/control/query", { run_id: RUN_ID, query: q, limit: TOP_K, budget });
  for (const budget of BUDGETS) {
    const series = await guarded(`${n} query http ${budget}`, () => timeSeries(queries, query(budget)));
    const returned = series.outputs.map((r) => (r.evidence ?? []).length);
    out[`http_${budget}`] = { ...strip(series), mean_evidence: round(returned.reduce((a, b) => a + b, 0) / Math.max(1, returned.length), 1), empty_answers: returned.filter((x) => x === 0).length };
  }
  out.http_livez = strip(await guarded(`${n} livez http`, () => timeSeries(queries, () => call(server, "GET", "/livez"))));
  const grpc = grpcClients(server);
  try {
    out.grpc_mid = strip(await guarded(`${n} query grpc mid`, () => timeSeries(queries, (q) => grpc.query({ run_id: RUN_ID, query: q, limit: TOP_K, budget: "mid" }))));
    out.grpc_livez = strip(await guarded(`${n} livez grpc`, () => timeSeries(queries, () => grpc.livez({}))));
  } finally {
    grpc.close();
  }
  return out;
}

/** Context with the default per-section limit (5), or with `limit` 50 so that the token budget is what binds. */
async function contextPhase(server, queries, limit) {
  const series = await timeSeries(queries.slice(0, CONTEXT_QUERIES), (q) =>
    post(server, "/v2/control/context", { run_id: RUN_ID, query: q, max_token_budget: CONTEXT_BUDGET, ...(limit ? { limit } : {}) }),
  );
  const blocks = series.outputs.map((r) => r.context_block ?? "");
  const over = series.outputs.filter((r) => (r.budget_used ?? 0) > CONTEXT_BUDGET).length;
  const used = series.outputs.map((r) => r.budget_used ?? 0);
  // Raw-library baseline: counting the returned blocks' tokens in-process with gpt-tokenizer (o200k_base).
  const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
  const tokenizer = await timeSeries(blocks, async (b) => countTokens(b), { warmup: 5 });
  return {
    ...strip(series),
    mean_budget_used: round(used.reduce((a, b) => a + b, 0) / Math.max(1, used.length), 0),
    over_budget: over,
    empty_blocks: blocks.filter((b) => b === "").length,
    tokenizer_baseline: strip(tokenizer),
  };
}

async function restartPhase(dataDir, key, queries, n) {
  const restarts = [];
  for (let i = 0; i < 2; i++) {
    restarts.push(
      await guarded(`${n} restart ${i + 1}`, async () => {
        const server = await startServer({ dataDir, key, readyTimeoutMs: 600_000 });
        try {
          const rssReady = server.rss();
          const t0 = performance.now();
          const first = await post(server, "/v2/control/query", { run_id: RUN_ID, query: queries[0], limit: TOP_K });
          const firstQueryMs = performance.now() - t0;
          let stored;
          try {
            stored = (await post(server, "/v2/control/ingest/stats", { run_id: RUN_ID })).total_ingested;
          } catch (e) {
            stored = e instanceof ApiError ? `stats ${e.status}` : undefined;
          }
          return { ready_ms: round(server.readyMs), rss_mib_at_ready: round(rssReady / MIB), first_query_ms: round(firstQueryMs, 2), first_query_evidence: (first.evidence ?? []).length, entries_after_restart: stored, entries_expected: n };
        } finally {
          await server.stop();
        }
      }, MAX_DISTURBANCE_WITH_RESTARTS),
    );
  }
  // A quiet server: graph loaded from disk, nothing pending, no save due. Then the synchronous bulk write.
  const server = await startServer({ dataDir, key, readyTimeoutMs: 600_000 });
  try {
    const idleWaitMs = await waitIdle(server.pid);
    const series = await guarded(`${n} query http mid after restart`, () =>
      timeSeries(queries, (q) => post(server, "/v2/control/query", { run_id: RUN_ID, query: q, limit: TOP_K, budget: "mid" })),
    );
    const after = { idle_wait_ms: round(idleWaitMs), query_http_mid: strip(series) };
    after.batch_insert = await guarded(`${n} batch_insert`, (attempt) => batchInsertPhase(server, Math.min(n, 10_000), attempt));
    after.stop_ms = round(await server.stop());
    return { restarts, after_restart: after };
  } finally {
    await server.stop();
  }
}

/** Synchronous bulk write: durable and searchable on answer, 1000 items a call, into a run of its own. */
async function batchInsertPhase(server, count, attempt) {
  const corpus = new Corpus(vocabulary(), 7);
  const items = corpus.entries(count).map((text) => ({ text, entry_type: "fact" }));
  const started = performance.now();
  for (let i = 0; i < items.length; i += 1000) {
    const res = await post(server, "/v2/control/batch_insert", { run_id: `${RUN_ID}-batch-${attempt}`, items: items.slice(i, i + 1000) }, 600_000);
    if (res.success === false) throw new Error(`batch_insert: ${res.message}`);
  }
  const ms = performance.now() - started;
  return { items: count, items_per_s: round((count / ms) * 1000, 0), total_ms: round(ms) };
}

async function vectorPhase(texts, queries) {
  const { kind, embedder } = await loadEmbedder();
  const n = texts.length;
  const d = embedder.dimensions;
  let t0 = performance.now();
  const matrix = await embedAll(embedder, texts);
  const embedMs = performance.now() - t0;
  const queryMatrix = await embedAll(embedder, queries);
  const qv = (i) => queryMatrix.subarray(i * d, (i + 1) * d);
  const indices = queries.map((_, i) => i);
  gc();

  // Ground truth: exact top-10 in double precision (JS loop, also timed); latency baseline: USearch's native exact
  // search over the same f32 vectors.
  const brute = await timeSeries(indices, async (i) => bruteForceTopK(matrix, n, d, qv(i), TOP_K), { warmup: 5 });
  const exact = brute.outputs;
  const native = await nativeExactSearch(matrix, n, d);
  const nativeSeries = await timeSeries(indices, async (i) => native(qv(i), TOP_K), { warmup: 5 });
  const out = {
    embedder: `${embedder.id} (${kind}, ${d}-d)`,
    embed_texts_per_s: round((n / embedMs) * 1000, 0),
    brute_force: { ...strip(nativeSeries), implementation: "usearch exactSearch, f32, 1 thread", recall_at_10: round(recallAgainst(exact, nativeSeries.outputs, TOP_K), 4) },
    brute_force_js: { ...strip(brute), implementation: "JavaScript loop over Float32Array (the recall ground truth)" },
  };

  const serverIndex = await serverVectorIndex(d);
  if (serverIndex) {
    t0 = performance.now();
    await serverIndex.add(matrix, n);
    const buildMs = performance.now() - t0;
    const search = await timeSeries(indices, async (i) => serverIndex.search(qv(i), TOP_K), { warmup: 5 });
    out.index = {
      implementation: serverIndex.name,
      build_ms: round(buildMs),
      add_items_per_s: round((n / buildMs) * 1000, 0),
      search: strip(search),
      recall_at_10: round(recallAgainst(exact, search.outputs, TOP_K), 4),
    };
    serverIndex.close();
    gc();
  }
  const { index, buildMs, withExpansion } = await buildUsearch(matrix, n, d, 2);
  const searchOf = (idx) => timeSeries(indices, async (i) => Array.from(idx.search(qv(i), TOP_K, 1).keys, Number), { warmup: 5 });
  const search = await searchOf(index);
  out.usearch = {
    implementation: "usearch direct (HNSW, cos, f16, connectivity 16, expansion_add 128, expansion_search 64, 2 threads to add)",
    build_ms: round(buildMs),
    add_items_per_s: round((n / buildMs) * 1000, 0),
    search: strip(search),
    recall_at_10: round(recallAgainst(exact, search.outputs, TOP_K), 4),
    wider_search: {},
  };
  const file = path.join(tempDir("usearch"), "index.usearch");
  for (const expansion of [128, 256]) {
    const wider = await searchOf(withExpansion(file, expansion));
    out.usearch.wider_search[`expansion_search_${expansion}`] = { recall_at_10: round(recallAgainst(exact, wider.outputs, TOP_K), 4), p50_ms: wider.p50_ms, p99_ms: wider.p99_ms };
  }
  removeDir(path.dirname(file));
  out.index ??= { ...out.usearch, implementation: `${out.usearch.implementation}: no compiled vector index module of the server found` };
  return out;
}

async function benchSize(n, words) {
  guard.reset();
  const result = { n, engine_status: "measured" };
  const corpus = new Corpus(words, 42);
  const texts = corpus.entries(n);
  const queries = corpus.queries(texts, QUERIES);
  const t0 = 1_700_000_000;
  const items = texts.map((text, i) => ({ text, entry_type: "fact", occurrence_time: t0 + i * 30, metadata_json: `{"seq":${i}}` }));
  result.corpus = { entries: n, mean_chars: round(texts.reduce((s, t) => s + t.length, 0) / n, 0), queries: queries.length, sample_queries: queries.slice(0, 3) };

  log(`${n}: raw lmdb baseline`);
  gc();
  result.lmdb = await guarded(`${n} lmdb`, async () => rawLmdbIngest(items));
  log(`${n}: empty start-ups`);
  result.empty_server = await guarded(`${n} empty start-ups`, () => emptyStarts(3), MAX_DISTURBANCE_WITH_RESTARTS);

  const key = mintAdminKey();
  let dataDir;
  let server;
  let stopped = false;
  try {
    const probe = await startServer({ dataDir: tempDir("probe"), key });
    const missing = [];
    for (const route of ["/v2/control/ingest", "/v2/control/query", "/v2/control/context"]) if (!(await implemented(probe, route))) missing.push(route);
    await probe.stop();
    removeDir(probe.dataDir);
    if (missing.length > 0) {
      result.engine_status = `not implemented yet (501): ${missing.join(", ")}`;
      log(`${n}: ${result.engine_status}`);
    } else {
      log(`${n}: ingest`);
      // A fresh server and data dir per attempt, so a disturbed load can be redone from scratch.
      result.ingest = await guarded(`${n} ingest`, async () => {
        if (server) await server.stop();
        if (dataDir) removeDir(dataDir);
        dataDir = tempDir(`n${n}`);
        server = await startServer({ dataDir, key });
        const ingest = await ingestAll(server, RUN_ID, items, { inFlight: INFLIGHT, timeoutMs: 120_000 + n * 20 });
        return {
          items_per_s: round((n / ingest.totalMs) * 1000, 0),
          total_ms: round(ingest.totalMs),
          acknowledged_items_per_s: round((n / ingest.submitMs) * 1000, 0),
          acknowledge_ms: round(ingest.submitMs),
          jobs: ingest.jobIds.length,
          requests_in_flight: INFLIGHT,
        };
      });
      // Jobs completed means durable and searchable; the server may still be adding vectors to its graph. Wait for
      // it to go idle so that queries are measured on a settled server, and record how long that took.
      result.ingest.background_settle_ms = round(await waitIdle(server.pid));
      result.memory = { rss_mib_loaded: round(server.rss() / MIB), peak_rss_mib: round(server.peakRss() / MIB) };
      log(`${n}: queries`);
      result.query = await queryPhase(server, queries, n);
      log(`${n}: context`);
      result.context = await guarded(`${n} context`, () => contextPhase(server, queries));
      result.context_limit_50 = await guarded(`${n} context limit 50`, () => contextPhase(server, queries, 50));
      result.memory.rss_mib_after_queries = round(server.rss() / MIB);
      result.memory.peak_rss_mib = round(server.peakRss() / MIB);
      result.shutdown_ms = round(await server.stop());
      stopped = true;
      result.disk_mib = round(diskBytes(dataDir) / MIB);
      log(`${n}: restarts`);
      const { restarts, after_restart } = await restartPhase(dataDir, key, queries, n);
      result.restarts = restarts;
      result.after_restart = after_restart;
    }
  } finally {
    if (server && !stopped) await server.stop();
    if (dataDir) removeDir(dataDir);
  }
  gc();
  log(`${n}: in-process vectors`);
  result.vectors = await guarded(`${n} vectors`, () => vectorPhase(texts, queries));
  result.interference = guard.records;
  return result;
}

function fmtNum(x, digits = 0) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  return typeof x === "number" ? x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : String(x);
}

function ratio(a, b, digits = 1) {
  return typeof a === "number" && typeof b === "number" && b > 0 ? `${(a / b).toFixed(digits)}×` : "—";
}

function table(results) {
  const NM = "not yet measured";
  const rows = [];
  const add = (metric, fn, target = "") => rows.push([metric, results.sizes.map(fn), target]);
  const lat = (s) => (s ? `${fmtNum(s.p50_ms, 2)} / ${fmtNum(s.p99_ms, 2)}` : NM);
  const measured = (r) => r.engine_status === "measured";
  add("ingest items/s, end to end (all jobs completed)", (r) => (measured(r) ? fmtNum(r.ingest.items_per_s) : NM), `≥ ${TARGETS.ingest_items_per_s}`);
  add("  baseline: raw lmdb-js transactionSync, 1000/txn", (r) => fmtNum(r.lmdb.items_per_s));
  add("  engine ÷ baseline", (r) => (measured(r) ? ratio(r.ingest.items_per_s, r.lmdb.items_per_s, 3) : NM));
  add("ingest items/s acknowledged (jobs accepted)", (r) => (measured(r) ? fmtNum(r.ingest.acknowledged_items_per_s) : NM));
  add("  background work after the last job completed, ms", (r) => (measured(r) ? fmtNum(r.ingest.background_settle_ms) : NM));
  add("batch_insert items/s (synchronous, searchable)", (r) => (measured(r) ? `${fmtNum(r.after_restart.batch_insert.items_per_s)} (${fmtNum(r.after_restart.batch_insert.items)} items)` : NM));
  for (const b of BUDGETS) {
    add(`query p50 / p99 ms, HTTP, budget ${b}`, (r) => (measured(r) ? lat(r.query[`http_${b}`]) : NM), b === "mid" ? `p99 ≤ ${TARGETS.query_p99_ms_at_100k} at 100k` : "");
  }
  add("query p50 / p99 ms, HTTP, budget mid, after restart (quiet server)", (r) => (measured(r) ? lat(r.after_restart.query_http_mid) : NM), `p99 ≤ ${TARGETS.query_p99_ms_at_100k} at 100k`);
  add("  baseline: GET /livez round trip, HTTP", (r) => (measured(r) ? lat(r.query.http_livez) : NM));
  add("  query mid ÷ livez (p50, p99)", (r) => (measured(r) ? `${ratio(r.query.http_mid.p50_ms, r.query.http_livez.p50_ms)}, ${ratio(r.query.http_mid.p99_ms, r.query.http_livez.p99_ms)}` : NM));
  add("query p50 / p99 ms, gRPC, budget mid", (r) => (measured(r) ? lat(r.query.grpc_mid) : NM), `p99 ≤ ${TARGETS.query_p99_ms_at_100k} at 100k`);
  add("  baseline: gRPC Livez round trip", (r) => (measured(r) ? lat(r.query.grpc_livez) : NM));
  add("  baseline: in-process brute-force cosine top-10 (usearch exactSearch)", (r) => lat(r.vectors.brute_force));
  add("  query mid HTTP ÷ brute force (p50)", (r) => (measured(r) ? ratio(r.query.http_mid.p50_ms, r.vectors.brute_force.p50_ms) : NM));
  add(`context p50 / p99 ms (max_token_budget ${CONTEXT_BUDGET}, default limit; mean tokens used)`, (r) => (measured(r) ? `${lat(r.context)} (${fmtNum(r.context.mean_budget_used)})` : NM));
  add("  baseline: gpt-tokenizer count of the returned blocks", (r) => (measured(r) ? lat(r.context.tokenizer_baseline) : NM));
  add("  context ÷ query mid (p50)", (r) => (measured(r) ? ratio(r.context.p50_ms, r.query.http_mid.p50_ms) : NM));
  add("context p50 / p99 ms, limit 50 (budget binds; mean tokens used)", (r) => (measured(r) ? `${lat(r.context_limit_50)} (${fmtNum(r.context_limit_50.mean_budget_used)})` : NM));
  add("vector recall@10 vs brute force: server index, whole-corpus scope", (r) => fmtNum(r.vectors.index.recall_at_10, 3), "");
  add("  server index search p50 / p99 ms (in-process)", (r) => lat(r.vectors.index.search));
  add("  server index add items/s (in-process)", (r) => fmtNum(r.vectors.index.add_items_per_s));
  add("  raw usearch, same settings: recall@10 (expansion_search 64 / 128 / 256)", (r) => {
    const u = r.vectors.usearch;
    return `${fmtNum(u.recall_at_10, 3)} / ${fmtNum(u.wider_search.expansion_search_128.recall_at_10, 3)} / ${fmtNum(u.wider_search.expansion_search_256.recall_at_10, 3)}`;
  });
  add("  raw usearch search p50 / p99 ms; add items/s", (r) => `${lat(r.vectors.usearch.search)}; ${fmtNum(r.vectors.usearch.add_items_per_s)}`);
  add("start-up to ready ms, restart on N entries (1st, 2nd)", (r) => (measured(r) ? r.restarts.map((x) => fmtNum(x.ready_ms)).join(", ") : NM), `≤ ${TARGETS.startup_ms_at_100k} at 100k`);
  add("  baseline: empty server (median of 3)", (r) => fmtNum(r.empty_server.ready_ms));
  add("  restart ÷ empty", (r) => (measured(r) ? ratio(r.restarts[0].ready_ms, r.empty_server.ready_ms) : NM));
  add("RSS MiB after loading N (peak during load)", (r) => (measured(r) ? `${fmtNum(r.memory.rss_mib_loaded)} (${fmtNum(r.memory.peak_rss_mib)})` : NM));
  add("  RSS MiB after restart on N", (r) => (measured(r) ? fmtNum(r.restarts[0].rss_mib_at_ready) : NM));
  add("  baseline: empty server RSS MiB", (r) => fmtNum(r.empty_server.rss_mib));
  add("  loaded ÷ empty", (r) => (measured(r) ? ratio(r.memory.rss_mib_loaded, r.empty_server.rss_mib) : NM));
  add("data dir MiB (raw lmdb-js of the same records)", (r) => (measured(r) ? `${fmtNum(r.disk_mib, 1)} (${fmtNum(r.lmdb.disk_mib, 1)})` : `— (${fmtNum(r.lmdb.disk_mib, 1)})`));
  const header = `| metric | ${results.sizes.map((r) => `${fmtNum(r.n)} entries`).join(" | ")} | target |`;
  const sep = `|---|${results.sizes.map(() => "---").join("|")}|---|`;
  return [header, sep, ...rows.map(([m, cells, t]) => `| ${m} | ${cells.join(" | ")} | ${t} |`)].join("\n");
}

async function main() {
  const words = vocabulary(path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json"));
  const results = { benchmark: "speed", machine: machine(), settings: { sizes: SIZES, queries: QUERIES, context_queries: CONTEXT_QUERIES, ingest_in_flight: INFLIGHT, top_k: TOP_K }, sizes: [] };
  for (const n of SIZES) {
    results.sizes.push(await benchSize(n, words));
    writeResults("speed.json", results); // keep what was measured even if a later size fails
  }
  const file = writeResults("speed.json", results);
  console.log(table(results));
  const embedder = results.sizes[0]?.vectors.embedder;
  console.log(`\nin-process vectors: ${embedder}; index: ${results.sizes[0]?.vectors.index.implementation}`);
  for (const r of results.sizes) {
    const hit = r.interference.filter(disturbed);
    const note = hit.length
      ? ` — WARNING: other processes used more of the CPUs than allowed during ${hit.map((p) => `${p.phase} (${Math.round(p.other_processes_cpu_share_mean * 100)} %)`).join(", ")}`
      : "; every phase ran on a quiet machine";
    console.log(`${r.n}: engine ${r.engine_status}${note}`);
  }
  console.log(`results: ${path.relative(ROOT, file)}`);
  return results.sizes.every((r) => r.engine_status === "measured") ? 0 : 2;
}

process.exitCode = await main();
