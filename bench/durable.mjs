// Durable write speed: every figure is for writes acknowledged only once flushed to disk, beside raw lmdb-js flushed
// transactions measured in the same run on the same disk.
//
// Usage: make bench (after bench/run.mjs), or: npx tsc -p tsconfig.build.json && node bench/durable.mjs
// Env:   BENCH_DURABLE_ENTRIES   entries loaded through ingest before the remember series (default 100000)
//        BENCH_REMEMBERS         remember requests in the concurrent series (default 3000)
//        BENCH_WRITERS           concurrent writers (default 16)
//        BENCH_WARMUP_REMEMBERS  untimed remember requests before the series (default 1000)
// Writes bench/results/durable.json.
//
// Phases, in this order (the server is stopped while the bench itself computes):
//   1. raw lmdb-js: 1000-record flushed transactions (like one ingest job), and WRITERS concurrent writers each
//      awaiting one small flushed `transaction()` at a time (like remember), p50/p99 of each acknowledgement;
//   2. Engram: ingest of ENTRIES items through POST /v2/control/ingest (1000 a request, next sent when the last is
//      acknowledged), until every job completed: durable items/s end to end;
//   3. Engram at that size: after WARMUP_REMEMBERS untimed requests, WRITERS concurrent writers, each sending
//      POST /v2/control/remember as soon as its last was answered: p50/p99 per request.
import { open } from "lmdb";
import path from "node:path";
import { ingestAll, post, round, summarize } from "./lib/api.mjs";
import { Corpus, vocabulary } from "./lib/corpus.mjs";
import { machine, waitQuietMachine, writeResults } from "./lib/machine.mjs";
import { ROOT, mintAdminKey, removeDir, startServer, tempDir, waitIdle } from "./lib/server.mjs";

const ENTRIES = Number(process.env.BENCH_DURABLE_ENTRIES ?? 100_000);
const REMEMBERS = Number(process.env.BENCH_REMEMBERS ?? 3000);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 16);
const WARMUP_REMEMBERS = Number(process.env.BENCH_WARMUP_REMEMBERS ?? 1000);
const TARGETS = { ingest_items_per_s_at_100k: 8000, remember_p99_ms_16_writers: 15 };
const log = (msg) => process.stderr.write(`[durable ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Runs `work(writer, i)` for i in [0, total) on `writers` concurrent loops; returns each call's latency in ms. */
async function concurrent(writers, total, work) {
  const latencies = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (next < total) {
        const i = next++;
        const t0 = performance.now();
        await work(writer, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return latencies;
}

async function rawLmdb(items) {
  const dir = tempDir("durable-lmdb");
  const root = open({ path: dir, maxDbs: 4, compression: false });
  const entries = root.openDB({ name: "entries" });
  const started = performance.now();
  for (let i = 0; i < items.length; i += 1000) {
    const batch = items.slice(i, i + 1000);
    await entries.transaction(() => batch.forEach((item, j) => entries.put(i + j, { content: item.text, created_at: Date.now() })));
  }
  const batchMs = performance.now() - started;
  const small = await concurrent(WRITERS, REMEMBERS, (writer, i) => entries.transaction(() => entries.put(items.length + i, { content: `writer ${writer} write ${i}` })));
  const smallChild = await concurrent(WRITERS, REMEMBERS, (writer, i) => root.childTransaction(() => entries.put(items.length + i, { content: `writer ${writer} write ${i}` })));
  await root.close();
  removeDir(dir);
  return {
    batch_1000_items_per_s: round((items.length / batchMs) * 1000, 0),
    concurrent_small_transaction_ms: summarize(small),
    concurrent_small_child_transaction_ms: summarize(smallChild),
  };
}

async function engram(items) {
  const dataDir = tempDir("durable-engram");
  const server = await startServer({ dataDir, key: mintAdminKey() });
  try {
    log(`ingest ${items.length}`);
    const ingest = await ingestAll(server, "durable", items, { inFlight: 1, timeoutMs: 120_000 + items.length * 20 });
    const ingestResult = { items_per_s: round((items.length / ingest.totalMs) * 1000, 0), total_ms: round(ingest.totalMs) };
    await waitIdle(server.pid);
    log(`remember × ${REMEMBERS}, ${WRITERS} writers`);
    const corpus = new Corpus(vocabulary(path.resolve(ROOT, "../shared/data/locomo_dev.json")), 99);
    // Untimed warm-up, as the query benchmarks have: the remember path's code is not yet optimised by the JIT
    // after a bulk ingest, and the first few hundred requests measure that rather than the server.
    const warmup = Array.from({ length: WARMUP_REMEMBERS }, () => corpus.sentence());
    await concurrent(WRITERS, WARMUP_REMEMBERS, (writer, i) => post(server, "/v2/control/remember", { session_id: `warmup-${writer}`, content: warmup[i] }));
    const texts = Array.from({ length: REMEMBERS }, () => corpus.sentence());
    const latencies = await concurrent(WRITERS, REMEMBERS, (writer, i) => post(server, "/v2/control/remember", { session_id: `writer-${writer}`, content: texts[i] }));
    return { ingest: ingestResult, remember_ms: summarize(latencies) };
  } finally {
    await server.stop();
    removeDir(dataDir);
  }
}

async function main() {
  const words = vocabulary(path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json"));
  const items = new Corpus(words, 42).entries(ENTRIES).map((text) => ({ text }));
  await waitQuietMachine(300_000);
  log("raw lmdb-js baseline");
  const baseline = await rawLmdb(items);
  await waitQuietMachine(300_000);
  const measured = await engram(items);
  const results = {
    machine: machine(),
    entries: ENTRIES,
    writers: WRITERS,
    baseline_lmdb: baseline,
    engram: measured,
    ratios: {
      ingest_vs_raw_batch: round(measured.ingest.items_per_s / baseline.batch_1000_items_per_s, 3),
      remember_p99_vs_raw_small_p99: round(measured.remember_ms.p99_ms / baseline.concurrent_small_transaction_ms.p99_ms, 2),
    },
    targets: TARGETS,
    met: {
      ingest: measured.ingest.items_per_s >= TARGETS.ingest_items_per_s_at_100k,
      remember_p99: measured.remember_ms.p99_ms <= TARGETS.remember_p99_ms_16_writers,
    },
  };
  writeResults("durable.json", results);
  console.log(JSON.stringify(results, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
