// The cost of expiry at 100k entries: the longest event-loop block of the first reads after 50k entries expire at the
// same instant (beside the same reads before they expired), how fast expired entries are purged, and what query
// latency is while a purge of 50k runs, as a ratio against the same queries with no purge running, in the same run.
//
// Usage: make bench-retention      (or: npx tsc -p tsconfig.build.json && node bench/retention.mjs)
// Env:   BENCH_SIZE      entries in the store (default 100000), written with batch_insert, 1000 a request
//        BENCH_EXPIRING  of which carry a TTL that the bench's clock then passes (default 50000; every other entry)
//        BENCH_QUERIES   queries per phase (default 300); during the purge the queries go on until it ends
//        BENCH_QUIET_WAIT_S  before measuring, wait up to this long for other processes to leave the CPUs (default 300)
//
// The built server runs in this process with a memory clock the bench controls (StartOptions.memoryNow) and no sweep
// timer (SERVICE_RETENTION_SWEEP_MS=0): the clock is advanced past the TTLs, which hides the expiring entries at the
// next read, and the purge is started through the test hook `expirySweep()` while queries run over HTTP. The longest
// block of a read is the longest gap between two runs of a 1 ms timer re-armed each time, less that 1 ms, while the
// read runs in this process, which is the server's (perf_hooks.monitorEventLoopDelay missed whole 100 ms passes in
// trials); the bench's own HTTP client shares the loop, so the same reads before the expiry are the baseline. Phases:
//   before_expiry   100k live entries
//   expired_hidden  50k live, 50k hidden awaiting the purge (the baseline the purge is compared with: same indexes)
//   during_purge    the same queries while the purge removes the 50k in slices of 32
//   after_purge     50k live entries, nothing awaiting
// Writes bench/results/retention.json.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { interferenceMonitor, machine, waitQuietMachine, writeResults } from "./lib/machine.mjs";
import { rng } from "./lib/corpus.mjs";
import { startInProcess } from "./lib/in-process.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SIZE = Number(process.env.BENCH_SIZE ?? 100_000);
const EXPIRING = Number(process.env.BENCH_EXPIRING ?? SIZE / 2);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_S ?? 300) * 1000;
const BATCH = 1000;
const TTL_S = 3600;


const log = (msg) => process.stderr.write(`[retention ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

const WORDS = ("deploy cache token billing service queue retry timeout database index replica shard config secret " +
  "rollback canary release build test lint schema migration backup restore alert metric latency budget owner team " +
  "python rust node docker kernel network storage disk memory thread lock event stream batch worker job schedule").split(" ");
const random = rng(7);
const sentence = (n) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");

let clock = Date.now();
const { engram, dataDir, post, call } = await startInProcess("retention", { SERVICE_RETENTION_SWEEP_MS: "0" }, { memoryNow: () => clock });

const runs = Array.from({ length: 10 }, (_, i) => `run-${i}`);
const questions = Array.from({ length: 50 }, () => sentence(4));
let asked = 0;

/** One query, in a run chosen in turn; its wall time in ms. */
async function oneQuery() {
  const i = asked++;
  const started = performance.now();
  await post("/v2/control/query", { run_id: runs[i % runs.length], query: questions[i % questions.length], limit: 10 });
  return performance.now() - started;
}

/**
 * The longest event-loop block (ms), the wall time (ms) and the CPU time of this process (ms: the server's work, the
 * bench's HTTP client and any background work the read set off, but not time the machine gave other processes) of
 * `read`, and its answer.
 */
async function blockOf(read) {
  let longest = 0;
  let last = performance.now();
  let pinging = true;
  const ping = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last - 1);
    last = now;
    if (pinging) setTimeout(ping, 1);
  };
  setTimeout(ping, 1);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const answer = await read();
  const wall = performance.now() - started;
  // A few timer turns more, so that a block at the very end of the read (or background work it set off) is counted.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const used = process.cpuUsage(cpu);
  pinging = false;
  return { block_ms: round(Math.max(0, longest)), wall_ms: round(wall), cpu_ms: round((used.user + used.system) / 1000), answer };
}

/** The reads whose blocks are compared: a cheap listing of one run, its run listing, then one query. */
async function readBlocks(name) {
  const activity = await blockOf(() => post("/v2/control/activity", { run_id: runs[0], limit: 1 }));
  const listing = await blockOf(() => call("GET", "/v2/control/runs"));
  const query = await blockOf(oneQuery);
  const figures = ({ block_ms, wall_ms, cpu_ms }) => ({ block_ms, wall_ms, cpu_ms });
  const result = {
    activity: figures(activity),
    run_listing: figures(listing),
    query: figures(query),
    visible_in_run_0: activity.answer.total_visible,
  };
  log(
    `${name}: longest block (CPU) activity ${result.activity.block_ms} ms (${result.activity.cpu_ms}), ` +
      `run listing ${result.run_listing.block_ms} ms (${result.run_listing.cpu_ms}), query ${result.query.block_ms} ms (${result.query.cpu_ms})`,
  );
  return result;
}

function summary(latencies) {
  return { queries: latencies.length, p50_ms: round(percentile(latencies, 50)), p99_ms: round(percentile(latencies, 99)), mean_ms: round(latencies.reduce((a, b) => a + b, 0) / latencies.length) };
}

async function phase(name) {
  const latencies = [];
  for (let i = 0; i < QUERIES; i++) latencies.push(await oneQuery());
  const result = summary(latencies);
  log(`${name}: p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms over ${result.queries} queries`);
  return result;
}

try {
  log(`writing ${SIZE} entries (${EXPIRING} with ttl_seconds ${TTL_S}) over ${runs.length} runs`);
  const loadStarted = performance.now();
  const expireEvery = SIZE / EXPIRING;
  for (let i = 0; i < SIZE; i += BATCH) {
    const items = [];
    for (let j = i; j < Math.min(SIZE, i + BATCH); j++) {
      items.push({ text: `${sentence(12)} (${j})`, entry_type: j % 10 === 0 ? "trace" : "fact", ...(j % expireEvery === 0 ? { ttl_seconds: TTL_S } : {}) });
    }
    await post("/v2/control/batch_insert", { run_id: runs[(i / BATCH) % runs.length], items });
  }
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  // Let background work (vector graph indexing, saves) finish: until this process uses under 5 % of a core for 2 s.
  for (let quietSeconds = 0, waited = 0; quietSeconds < 2 && waited < 300; waited++) {
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const used = process.cpuUsage(before);
    quietSeconds = (used.user + used.system) / 1e6 < 0.05 ? quietSeconds + 1 : 0;
  }
  const quiet = await waitQuietMachine(QUIET_WAIT_MS);
  log(`machine quiet: ${quiet.quiet} after ${quiet.waited_ms} ms`);
  const interference = interferenceMonitor();

  for (let i = 0; i < 30; i++) await oneQuery();
  // The same reads as right after the expiry, three times, with nothing due: the baseline of the blocks.
  const baselineReads = [];
  for (let i = 0; i < 3; i++) baselineReads.push(await readBlocks(`reads before expiry (${i + 1})`));
  const beforeExpiry = await phase("before_expiry");

  clock += (TTL_S + 1) * 1000;
  // The first reads after the clock passed the TTLs: the first one takes every expired entry out of the counts.
  const firstReads = await readBlocks("first reads after expiry");
  const firstRead = firstReads.query.wall_ms;
  const visible = firstReads.visible_in_run_0;
  const expiredHidden = await phase("expired_hidden");

  log(`purging ${EXPIRING} expired entries while querying`);
  const purgeStarted = performance.now();
  let purgeEnded;
  const purge = engram.testHooks.expirySweep().then((removed) => {
    purgeEnded = performance.now();
    return removed;
  });
  const during = [];
  while (purgeEnded === undefined) during.push(await oneQuery());
  const removed = await purge;
  const purgeSeconds = (purgeEnded - purgeStarted) / 1000;
  const duringPurge = summary(during);
  log(`during_purge: p50 ${duringPurge.p50_ms} ms, p99 ${duringPurge.p99_ms} ms over ${duringPurge.queries} queries`);
  log(`purged ${removed} entries in ${round(purgeSeconds)} s: ${Math.round(removed / purgeSeconds)} entries/s`);
  const afterPurge = await phase("after_purge");
  const disturbance = interference.stop();

  const report = {
    machine: machine(),
    entries: SIZE,
    expiring: EXPIRING,
    load_seconds: round(loadSeconds, 1),
    quiet_wait: quiet,
    disturbance,
    first_query_after_expiry_ms: round(firstRead),
    run_0_visible_after_expiry: visible,
    reads_before_expiry: baselineReads,
    first_reads_after_expiry: firstReads,
    longest_block_ms: {
      before_expiry: Math.max(...baselineReads.flatMap((r) => [r.activity.block_ms, r.run_listing.block_ms, r.query.block_ms])),
      first_reads_after_expiry: Math.max(firstReads.activity.block_ms, firstReads.run_listing.block_ms, firstReads.query.block_ms),
    },
    purge: { removed, seconds: round(purgeSeconds), entries_per_second: Math.round(removed / purgeSeconds) },
    queries: { before_expiry: beforeExpiry, expired_hidden: expiredHidden, during_purge: duringPurge, after_purge: afterPurge },
    during_purge_vs_expired_hidden: { p50: round(duringPurge.p50_ms / expiredHidden.p50_ms), p99: round(duringPurge.p99_ms / expiredHidden.p99_ms) },
  };
  if (removed !== EXPIRING) throw new Error(`purged ${removed} entries, not ${EXPIRING}`);
  const liveInRun0 = SIZE / runs.length - EXPIRING / runs.length;
  if (visible !== liveInRun0) throw new Error(`run-0 showed ${visible} entries right after the expiry, not ${liveInRun0}`);
  const file = writeResults("retention.json", report);
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  log(`wrote ${path.relative(ROOT, file)}`);
} finally {
  await engram.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
