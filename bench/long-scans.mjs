// The longest event-loop block during Engram's long scans at 100k entries, beside baselines measured in the same run.
//
// Usage: npx tsc -p tsconfig.build.json && node bench/long-scans.mjs      (not part of `make test` or `make bench`)
// Env:   BENCH_SIZE     entries in the run, lessons included (default 100000)
//        BENCH_LESSONS  of which lessons, written last so memory_health compares them (default 1000)
//        BENCH_REPEATS  calls per operation (default 3); the worst block and the median duration are reported
//        BENCH_QUIET_WAIT_S  before measuring, wait up to this long for other processes to leave the CPUs (default 300)
//
// The built server runs in this process, so perf_hooks.monitorEventLoopDelay (1 ms resolution) and a 1 ms
// setInterval lag probe watch the very loop that serves the requests. Each operation is one HTTP call made with
// fetch from the same process; the client's share of the loop is what the `livez` baseline shows. For each
// operation the report gives `block_ms` (the longest the loop was held: the larger of the histogram's maximum
// delay and the probe's worst lag, over all repeats), `p99_delay_ms` (the histogram's 99th percentile) and
// `duration_ms` (the call's median wall time: about what a synchronous scan would have held the loop for) and
// `first_duration_ms` (the first call's: remembered totals and deduplication digests make later calls cheaper), beside
// the same figures for two baselines: an idle loop (1 s) and 50 sequential GET /livez. On a shared machine the
// idle baseline shows how much of a block is the OS scheduling the process out rather than the server.
// Writes bench/results/long-scans.json.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { interferenceMonitor, waitQuietMachine } from "./lib/machine.mjs";
import { rng } from "./lib/corpus.mjs";
import { startInProcess } from "./lib/in-process.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SIZE = Number(process.env.BENCH_SIZE ?? 100_000);
const LESSONS = Number(process.env.BENCH_LESSONS ?? 1000);
const REPEATS = Math.max(1, Number(process.env.BENCH_REPEATS ?? 3));
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_S ?? 300) * 1000;
const RUN = "scans";
const BATCH = 1000;


const log = (msg) => process.stderr.write(`[long-scans ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const WORDS = ("deploy cache token billing service queue retry timeout database index replica shard config secret " +
  "rollback canary release build test lint schema migration backup restore alert metric latency budget owner team " +
  "python rust node docker kernel network storage disk memory thread lock event stream batch worker job schedule").split(" ");
const random = rng(42);
const sentence = (n) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");

/** Watches the loop while `fn` runs: the worst delay of the histogram and of a 1 ms interval probe, in ms. */
async function watched(fn) {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let last = performance.now();
  let worstLag = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    worstLag = Math.max(worstLag, now - last - 1);
    last = now;
  }, 1);
  histogram.enable();
  const started = performance.now();
  const value = await fn();
  const duration = performance.now() - started;
  histogram.disable();
  clearInterval(probe);
  // The histogram records how late its 1 ms timer fired, plus the resolution itself.
  const histogramMax = Math.max(0, histogram.max / 1e6 - 1);
  return { value, duration, block: Math.max(histogramMax, worstLag), p99: Math.max(0, histogram.percentile(99) / 1e6 - 1) };
}

const { engram, dataDir, adminKey, base, call, post } = await startInProcess("long-scans");

try {
  const facts = SIZE - LESSONS;
  // Half of each deduplicating batch repeats texts already in the run (the first facts written), half is new.
  const repeated = Array.from({ length: BATCH / 2 }, (_, j) => ({ text: `repeat ${j} ${sentence(6)}` }));
  log(`writing ${facts} facts and traces with batch_insert, ${BATCH} a request`);
  const loadStarted = performance.now();
  for (let i = 0; i < facts; i += BATCH) {
    const items = [];
    for (let j = i; j < Math.min(facts, i + BATCH); j++) {
      const text = j < repeated.length ? repeated[j].text : `${sentence(12)} (${j})`;
      items.push({ text, entry_type: j % 10 === 0 && j >= repeated.length ? "trace" : "fact", user_id: j % 3 === 0 && j >= repeated.length ? "u1" : "" });
    }
    await post("/v2/control/batch_insert", { run_id: RUN, agent_id: `agent-${(i / BATCH) % 7}`, items });
  }
  log(`writing ${LESSONS} lessons with ingest`);
  for (let i = 0; i < LESSONS; i += BATCH) {
    const items = [];
    for (let j = i; j < Math.min(LESSONS, i + BATCH); j++) {
      const subject = `${WORDS[j % 12]} ${WORDS[(j * 7) % WORDS.length]}`;
      items.push({ text: `${j % 5 === 0 ? "never " : ""}${subject} before ${sentence(4)}`, intent: "lesson", lesson_type: j % 4 === 0 ? "failure" : "success" });
    }
    const { job_id: jobId } = await post("/v2/control/ingest", { run_id: RUN, items });
    for (;;) {
      const job = await call("GET", `/v2/control/ingest/jobs/${jobId}`);
      if (job.done) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const total = (await post("/v2/control/activity", { run_id: RUN, limit: 1 })).total_visible;
  if (total !== SIZE) throw new Error(`expected ${SIZE} entries, the run holds ${total}`);
  // Let background work (vector graph indexing, saves) finish before measuring: until this process uses under 5 %
  // of a core for two seconds running.
  for (let quietSeconds = 0, waited = 0; quietSeconds < 2 && waited < 300; waited++) {
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const used = process.cpuUsage(before);
    quietSeconds = (used.user + used.system) / 1e6 < 0.05 ? quietSeconds + 1 : 0;
  }

  let batchNumber = 0;
  const freshBatch = (tag) => Array.from({ length: BATCH / 2 }, (_, j) => ({ text: `fresh ${tag} ${batchNumber} ${j} ${sentence(6)}` }));

  const operations = {
    livez_x50: async () => {
      for (let i = 0; i < 50; i++) await call("GET", "/livez");
    },
    activity_page_unfiltered: () => post("/v2/control/activity", { run_id: RUN, limit: 50 }),
    activity_page_filtered: () => post("/v2/control/activity", { run_id: RUN, limit: 50, agent_id: "agent-3", entry_types: ["fact"] }),
    activity_page_no_match: () => post("/v2/control/activity", { run_id: RUN, limit: 50, agent_id: "nobody" }),
    activity_export_all: async () => {
      // Read as a stream and not parsed: parsing ~60 MB of JSON here would block this (the server's) loop itself.
      const response = await fetch(`${base}/v2/control/activity/export`, {
        method: "POST",
        headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
        body: JSON.stringify({ run_id: RUN }),
      });
      let tail = "";
      for await (const chunk of response.body) tail = (tail + Buffer.from(chunk).toString("latin1")).slice(-200);
      const count = Number(/"entry_count":\s*(\d+)/.exec(tail)?.[1]);
      if (!response.ok || count !== SIZE) throw new Error(`export: ${response.status}, ${count} entries, not ${SIZE}: ${tail}`);
      return count;
    },
    memory_health_10k: () => post("/v2/control/memory_health", { run_id: RUN, limit: 10_000 }),
    // The same shape without `deduplicate`, into another run: the cost of embedding and writing 1000 items.
    batch_insert_1000: () => post("/v2/control/batch_insert", { run_id: `${RUN}-plain`, items: [...repeated, ...freshBatch("plain")].map((item) => ({ text: `${item.text} plain ${batchNumber++}` })) }),
    // Deduplicated against the 100k-entry run: 500 items repeat stored texts, 500 are written. The first call
    // digests the run; later ones read only what was written since.
    batch_insert_dedup_1000: async () => {
      batchNumber += 1;
      const res = await post("/v2/control/batch_insert", { run_id: RUN, deduplicate: true, items: [...repeated, ...freshBatch("dedup")] });
      const deduplicated = res.item_results.filter((r) => r.deduplicated).length;
      if (deduplicated !== BATCH / 2) throw new Error(`${deduplicated} items deduplicated, not ${BATCH / 2}`);
      return deduplicated;
    },
  };

  const quiet = await waitQuietMachine(QUIET_WAIT_MS);
  log(`machine quiet: ${quiet.quiet} after ${quiet.waited_ms} ms`);
  const interference = interferenceMonitor();
  const results = {};
  {
    const idle = [];
    for (let r = 0; r < REPEATS; r++) idle.push(await watched(() => new Promise((resolve) => setTimeout(resolve, 1000))));
    results.idle_1s = { block_ms: round(Math.max(...idle.map((w) => w.block)), 2), p99_delay_ms: round(Math.max(...idle.map((w) => w.p99)), 2), duration_ms: 1000 };
    log(`idle: worst block ${results.idle_1s.block_ms} ms, p99 delay ${results.idle_1s.p99_delay_ms} ms`);
  }
  for (const [name, fn] of Object.entries(operations)) {
    const blocks = [];
    const p99s = [];
    const durations = [];
    for (let r = 0; r < REPEATS; r++) {
      const { block, p99, duration } = await watched(fn);
      blocks.push(block);
      p99s.push(p99);
      durations.push(duration);
    }
    results[name] = {
      block_ms: round(Math.max(...blocks), 2),
      blocks_ms: blocks.map((b) => round(b, 2)),
      p99_delay_ms: round(Math.max(...p99s), 2),
      duration_ms: round(median(durations), 1),
      first_duration_ms: round(durations[0], 1),
    };
    log(`${name}: worst block ${results[name].block_ms} ms (${results[name].blocks_ms.join(", ")}), p99 delay ${results[name].p99_delay_ms} ms, median duration ${results[name].duration_ms} ms (first ${results[name].first_duration_ms} ms)`);
  }
  {
    const idle = [];
    for (let r = 0; r < REPEATS; r++) idle.push(await watched(() => new Promise((resolve) => setTimeout(resolve, 1000))));
    results.idle_1s_after = { block_ms: round(Math.max(...idle.map((w) => w.block)), 2), p99_delay_ms: round(Math.max(...idle.map((w) => w.p99)), 2), duration_ms: 1000 };
    log(`idle after: worst block ${results.idle_1s_after.block_ms} ms, p99 delay ${results.idle_1s_after.p99_delay_ms} ms`);
  }
  const disturbance = interference.stop();
  const health = await post("/v2/control/memory_health", { run_id: RUN, limit: 10_000 });
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    entries: SIZE,
    lessons: LESSONS,
    load_seconds: round(loadSeconds, 1),
    repeats: REPEATS,
    quiet_wait: quiet,
    disturbance,
    memory_health_contradictions: health.contradictions.length,
    results,
  };
  fs.mkdirSync(path.join(ROOT, "bench/results"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, "bench/results/long-scans.json"), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  await engram.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
