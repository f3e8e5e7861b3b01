// Soak: mixed load at a fixed rate for SOAK_MINUTES against the built server, watching what it holds over time —
// memory, heap, open files, handles — and whether latency drifts. Finds leaks that a short benchmark cannot.
//
// Usage: make soak   (or, after make build: node bench/soak.mjs); SOAK_MINUTES=5 make soak for a short check
// Env:   SOAK_MINUTES   duration of the load (default 30)
//        SOAK_RATE      requests per second, open loop (default 50)
//        SOAK_ENTRIES   entries seeded into run `bench` first (default 20000)
//        SOAK_SAMPLE_S  seconds between samples (default 10)
//        BENCH_QUIET_WAIT_S  wait up to this long for a quiet machine before starting (default 300)
//        SOAK_PROF_DIR  when set, the server writes a CPU profile there (sampled every 0.5 ms) as it stops
//        BENCH_SERVER, SERVICE_*  as for the other benchmarks
// Writes bench/results/soak.json (settings, every sample, summary; rewritten after each sample, so an interrupted
// soak keeps what it measured). Exit status 0 when every target was met, 3 when one was missed, 1 on failure.
//
// The load is open loop: request i leaves at start + i / SOAK_RATE whatever the earlier ones do, and its latency is
// measured from that moment, so a stall shows as latency rather than as a lower rate. Each request is, by a seeded
// draw, 70 % query (4 in 5 on the seeded run, 1 in 5 on the last minute's writes), 10 % remember, 10 % batch_insert
// of 5 entries, 5 % context (budget 2000 tokens), 5 % activity page (20 entries), and goes over HTTP/JSON or gRPC
// with even odds (one keep-alive HTTP pool of up to 32 sockets; one gRPC channel, as a long-lived agent would hold).
// Writes go to a run per minute (`soak-<minute>`), and each such run is deleted through POST /v2/control/delete_run
// three minutes later, so the live data stops growing after warm-up: memory that still grows is a leak, not data.
//
// Every SOAK_SAMPLE_S: the server's VmRSS, RssAnon and RssFile (/proc/<pid>/status), open fds (/proc/<pid>/fd),
// heap used, active handles and event-loop lag p99 (its /metrics, prom-client defaults), the window's request count,
// errors and p50/p99, and other processes' share of the CPUs. Summary, after a warm-up of the first third:
// RSS slope (least squares over the remaining two thirds, MiB/hour, through the lowest sample of every 3 minutes:
// the level garbage collection returns to; the slope through every sample is reported beside it), p99 drift (the last 5 minutes against the first
// 5 after warm-up, shorter for short soaks), fds and handles at start and end, errors.
import path from "node:path";
import { ingestAll, round, summarize, percentile } from "./lib/api.mjs";
import { Corpus, rng, vocabulary } from "./lib/corpus.mjs";
import { grpcClients } from "./lib/grpc.mjs";
import { httpClient } from "./lib/http-client.mjs";
import { ErrorTally, openLoop } from "./lib/load-gen.mjs";
import { interferenceMonitor, machine, waitQuietMachine, writeResults } from "./lib/machine.mjs";
import { serverHolds } from "./lib/process-stats.mjs";
import { ROOT, cpuSeconds, mintAdminKey, sleep, startServer, tempDir, waitIdle } from "./lib/server.mjs";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const RATE = Number(process.env.SOAK_RATE ?? 50);
const ENTRIES = Number(process.env.SOAK_ENTRIES ?? 20_000);
const SAMPLE_MS = Number(process.env.SOAK_SAMPLE_S ?? 10) * 1000;
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_S ?? 300) * 1000;
const RUN_ID = "bench";
const ROTATE_MS = 60_000;
/** A minute's write run is deleted this many minutes after it began. */
const KEEP_RUNS = 3;
const REQUEST_TIMEOUT_MS = 30_000;
const TARGETS = { rss_slope_mib_per_hour: 5, p99_drift_percent: 20, errors: 0 };
/** The soak ends early when this many samples in a row saw errors and not one answer: the server has stalled. */
const STALLED_SAMPLES = 6;
const MIX = [
  ["query", 0.7],
  ["remember", 0.1],
  ["batch_insert", 0.1],
  ["context", 0.05],
  ["activity", 0.05],
];

const log = (msg) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Least-squares slope of y over x. */
function slope(points) {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}

/** The request of operation `kind` over `transport`: a function returning a promise of the answer. */
function makeRequests(server, texts) {
  const http = httpClient(server, { sockets: 32, timeoutMs: REQUEST_TIMEOUT_MS });
  const grpc = grpcClients(server, { deadlineMs: REQUEST_TIMEOUT_MS });
  let nextText = 0;
  const text = () => texts[nextText++ % texts.length];
  const succeeded = (kind) => (res) => {
    if (res.success === false) throw Object.assign(new Error(`${kind}: ${res.message ?? "success false"}`), { name: "NotSuccessful" });
    return res;
  };
  const requests = {
    query: (t, { run, query }) => (t === "http" ? http.post("/v2/control/query", { run_id: run, query, limit: 10 }) : grpc.query({ run_id: run, query, limit: 10 })),
    remember: (t, { writeRun }) => {
      const body = { session_id: writeRun, content: text() };
      return (t === "http" ? http.post("/v2/control/remember", body) : grpc.remember(body)).then(succeeded("remember"));
    },
    batch_insert: (t, { writeRun }) => {
      const body = { run_id: writeRun, items: Array.from({ length: 5 }, () => ({ text: text() })) };
      return (t === "http" ? http.post("/v2/control/batch_insert", body) : grpc.batchInsert(body)).then(succeeded("batch_insert"));
    },
    context: (t, { query }) => {
      const body = { run_id: RUN_ID, query, max_token_budget: 2000 };
      return t === "http" ? http.post("/v2/control/context", body) : grpc.getContext(body);
    },
    activity: (t, { run }) => (t === "http" ? http.post("/v2/control/activity", { run_id: run, limit: 20 }) : grpc.listActivity({ run_id: run, limit: 20 })),
  };
  return {
    requests,
    deleteRun: (run) => http.post("/v2/control/delete_run", { run_id: run }),
    close() {
      http.close();
      grpc.close();
    },
  };
}

/**
 * The lowest sample of each bucket of `bucketS` seconds: the floor the garbage collector returns memory to. Heap and
 * RSS rise and fall by ~100 MiB between major collections a few minutes apart, and a straight line through every
 * sample tilts with wherever that saw-tooth happens to stand at the window's ends; a line through the floors does not.
 */
function floors(points, bucketS) {
  const byBucket = new Map();
  const t0 = points[0]?.[0] ?? 0;
  for (const [x, y] of points) {
    const b = Math.floor(((x - t0) * 3600) / bucketS);
    const bucket = byBucket.get(b) ?? { low: [x, y], samples: 0 };
    if (y < bucket.low[1]) bucket.low = [x, y];
    bucket.samples++;
    byBucket.set(b, bucket);
  }
  // A bucket with under half the samples of a full one (the last, cut short by the end of the soak) has no floor: its
  // lowest sample is wherever the saw-tooth stood, and would tilt the line by itself.
  const full = Math.max(...[...byBucket.values()].map((bucket) => bucket.samples));
  return [...byBucket.values()].filter((bucket) => bucket.samples * 2 >= full).map((bucket) => bucket.low);
}

function summary(samples, totals, holds, stalledAt) {
  const warmupEnd = Math.ceil(samples.length / 3);
  const steady = samples.slice(warmupEnd);
  const hours = (s) => s.t_s / 3600;
  const series = (field) => steady.filter((s) => s[field] !== undefined).map((s) => [hours(s), s[field]]);
  const slopeOf = (field) => round(slope(series(field)), 2);
  // Buckets of 3 minutes (at least 3 samples; at most a quarter of the steady part, so that a short soak has 4).
  const bucketS = Math.max((3 * SAMPLE_MS) / 1000, Math.min(180, (steady.length * SAMPLE_MS) / 1000 / 4));
  const floorSlopeOf = (field) => round(slope(floors(series(field), bucketS)), 2);
  // p99 drift: the first and last windows of up to 5 minutes after warm-up, each over every request it holds.
  const windowSamples = Math.max(1, Math.min(Math.round(300_000 / SAMPLE_MS), Math.floor(steady.length / 2)));
  const p99Of = (list) => percentile(list.flatMap((s) => s.latencies), 99);
  const firstP99 = p99Of(steady.slice(0, windowSamples));
  const lastP99 = p99Of(steady.slice(-windowSamples));
  const drift = ((lastP99 - firstP99) / firstP99) * 100;
  const afterWarmup = steady[0] ?? samples[0];
  const end = samples.at(-1);
  const rssSlope = floorSlopeOf("rss");
  const errors = totals.errors.count;
  return {
    stalled_at_s: stalledAt,
    warmup_samples: warmupEnd,
    steady_samples: steady.length,
    floor_bucket_s: bucketS,
    rss_slope_mib_per_hour: rssSlope,
    rss_anon_slope_mib_per_hour: floorSlopeOf("rss_anon"),
    rss_file_slope_mib_per_hour: floorSlopeOf("rss_file"),
    heap_used_slope_mib_per_hour: floorSlopeOf("heap_used"),
    rss_every_sample_slope_mib_per_hour: slopeOf("rss"),
    heap_used_every_sample_slope_mib_per_hour: slopeOf("heap_used"),
    rss_mib: { before_load: round(holds.before.rss), after_warmup: round(afterWarmup?.rss), end: round(end?.rss), peak: round(Math.max(...samples.map((s) => s.rss ?? 0))) },
    p99_window_minutes: round((windowSamples * SAMPLE_MS) / 60_000, 2),
    p99_first_window_ms: round(firstP99, 2),
    p99_last_window_ms: round(lastP99, 2),
    p99_drift_percent: round(drift, 1),
    fds: { before_load: holds.before.fds, after_warmup: afterWarmup?.fds, end: end?.fds, after_load: holds.after.fds },
    active_handles: { before_load: holds.before.active_handles, after_warmup: afterWarmup?.active_handles, end: end?.active_handles, after_load: holds.after.active_handles },
    errors: totals.errors.summary(),
    dropped: totals.dropped,
    requests: totals.sent,
    by_kind: Object.fromEntries(Object.entries(totals.latency).map(([k, v]) => [k, summarize(v)])),
    delete_runs: { count: totals.deletes.length, latency_ms: summarize(totals.deletes) },
    other_processes_cpu_share_mean: round(samples.reduce((a, s) => a + s.other_processes_cpu_share, 0) / Math.max(1, samples.length), 3),
    met: {
      rss_slope: rssSlope < TARGETS.rss_slope_mib_per_hour,
      p99_drift: drift < TARGETS.p99_drift_percent,
      zero_errors: errors === 0 && totals.dropped === 0,
      no_stall: stalledAt === undefined,
      // Once the clients are gone, the server holds no more files or handles than before the load began.
      fds_back_to_start: holds.after.fds <= holds.before.fds,
      handles_back_to_start: holds.after.active_handles <= holds.before.active_handles,
    },
  };
}

async function main() {
  const words = vocabulary(path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json"));
  const corpus = new Corpus(words, 42);
  const entries = corpus.entries(ENTRIES);
  const queries = corpus.queries(entries, 1000);
  const texts = new Corpus(words, 11).entries(20_000);
  const random = rng(2024);

  const server = await startServer({ dataDir: tempDir("soak"), key: mintAdminKey(), nodeArgs: process.env.SOAK_PROF_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.SOAK_PROF_DIR}`, "--cpu-prof-interval=500"] : [] });
  log(`server ready; seeding ${ENTRIES} entries`);
  await ingestAll(server, RUN_ID, entries.map((text) => ({ text })), { batch: 1000, inFlight: 1 });
  await waitIdle(server.pid, { quietMs: 1000, timeoutMs: 120_000 });
  const quiet = await waitQuietMachine(QUIET_WAIT_MS);
  // The seeding client's keep-alive sockets close after a few idle seconds; the baseline is taken after that.
  await sleep(6000);
  const holds = { before: await serverHolds(server) };
  log(`${quiet.quiet ? "quiet machine" : `machine busy (other processes ${Math.round((quiet.other_share ?? 0) * 100)} % of the CPUs)`}; ${MINUTES} min at ${RATE} req/s`);

  const client = makeRequests(server, texts);
  const totals = { sent: 0, dropped: 0, errors: new ErrorTally(), latency: Object.fromEntries(MIX.map(([k]) => [k, []])), deletes: [] };
  const started = performance.now();
  const minute = () => Math.floor((performance.now() - started) / ROTATE_MS);
  let window = { latencies: [], errors: 0, sent: 0 };
  const samples = [];
  const settings = { minutes: MINUTES, rate_per_s: RATE, entries: ENTRIES, sample_s: SAMPLE_MS / 1000, mix: Object.fromEntries(MIX), keep_write_runs_minutes: KEEP_RUNS, request_timeout_ms: REQUEST_TIMEOUT_MS };
  const results = { benchmark: "soak", machine: machine(), settings, quiet_at_start: quiet, holds_before_load: holds.before, samples };

  const fire = async (i, dueAt) => {
    let x = random();
    const kind = MIX.find(([, share]) => (x -= share) < 0)?.[0] ?? "query";
    const transport = random() < 0.5 ? "http" : "grpc";
    const m = minute();
    const lastWrites = m > 0 ? `soak-${m - 1}` : RUN_ID;
    const args = { writeRun: `soak-${m}`, run: kind === "query" && random() >= 0.8 ? lastWrites : RUN_ID, query: queries[i % queries.length] };
    if (kind === "activity" && random() < 0.5) args.run = lastWrites;
    totals.sent++;
    window.sent++;
    try {
      await client.requests[kind](transport, args);
      const ms = performance.now() - dueAt;
      totals.latency[kind].push(ms);
      window.latencies.push(ms);
    } catch (e) {
      totals.errors.add(e);
      window.errors++;
      if (totals.errors.count <= 5) log(`error (${kind} over ${transport}): ${String(e?.message ?? e).slice(0, 200)}`);
    }
  };

  let loadDone = false;
  let stalledAt;
  const rotation = (async () => {
    for (let m = 1; !loadDone; m++) {
      while (!loadDone && performance.now() - started < m * ROTATE_MS) await sleep(Math.min(1000, started + m * ROTATE_MS - performance.now()));
      if (loadDone || m - KEEP_RUNS < 0) continue;
      const t0 = performance.now();
      try {
        await client.deleteRun(`soak-${m - KEEP_RUNS}`);
        totals.deletes.push(performance.now() - t0);
      } catch (e) {
        totals.errors.add(e);
        window.errors++;
        log(`delete_run soak-${m - KEEP_RUNS}: ${String(e?.message ?? e).slice(0, 200)}`);
      }
    }
  })();

  const sampler = (async () => {
    let cpu = cpuSeconds(server.pid);
    let monitor = interferenceMonitor();
    let dead = 0;
    for (let k = 1; !loadDone; k++) {
      while (!loadDone && performance.now() - started < k * SAMPLE_MS) await sleep(Math.min(500, started + k * SAMPLE_MS - performance.now()));
      if (loadDone) break;
      const done = window;
      window = { latencies: [], errors: 0, sent: 0 };
      const load = monitor.stop();
      monitor = interferenceMonitor();
      const now = cpuSeconds(server.pid);
      const held = await serverHolds(server);
      const sample = {
        t_s: round((performance.now() - started) / 1000, 1),
        ...Object.fromEntries(Object.entries(held).map(([k2, v]) => [k2, typeof v === "number" ? round(v, 2) : v])),
        sent: done.sent,
        errors: done.errors,
        p50_ms: round(percentile(done.latencies, 50), 2),
        p99_ms: round(percentile(done.latencies, 99), 2),
        server_cpu_share: round((now - cpu) / (SAMPLE_MS / 1000), 3),
        other_processes_cpu_share: load.other_processes_cpu_share_mean,
      };
      cpu = now;
      dead = done.latencies.length === 0 && done.errors > 0 ? dead + 1 : 0;
      if (dead >= STALLED_SAMPLES && stalledAt === undefined) {
        stalledAt = round(sample.t_s - (STALLED_SAMPLES * SAMPLE_MS) / 1000, 1);
        log(`no answer since t ${stalledAt} s: the server has stalled; ending the soak`);
      }
      samples.push({ ...sample, latencies: done.latencies });
      log(`t ${Math.round(sample.t_s)} s: rss ${round(sample.rss)} MiB (anon ${round(sample.rss_anon)}), heap ${round(sample.heap_used)} MiB, fds ${sample.fds}, handles ${sample.active_handles}, p99 ${sample.p99_ms} ms, errors ${totals.errors.count}, other processes ${Math.round(sample.other_processes_cpu_share * 100)} %`);
      results.samples = samples.map(({ latencies: _l, ...rest }) => rest);
      writeResults("soak.json", results);
      if (!server.alive()) throw new Error(`server died during the soak:\n${server.output()}`);
    }
  })();

  await openLoop({
    ratePerS: RATE,
    durationMs: MINUTES * 60_000,
    maxOutstanding: 2000,
    fire,
    onDropped: () => totals.dropped++,
    stop: () => stalledAt !== undefined,
  });
  loadDone = true;
  await Promise.all([rotation, sampler]);
  client.close();
  // Closed client sockets take a moment to be seen closed by the server; poll (bounded) rather than sleep blindly.
  for (let i = 0; i < 20; i++) {
    holds.after = await serverHolds(server);
    if (holds.after.fds <= holds.before.fds && holds.after.active_handles <= holds.before.active_handles) break;
    await sleep(500);
  }
  await server.stop();

  results.holds_after_load = holds.after;
  results.samples = samples.map(({ latencies: _l, ...rest }) => rest);
  results.summary = summary(samples, totals, holds, stalledAt);
  results.targets = TARGETS;
  const file = writeResults("soak.json", results);
  const s = results.summary;
  console.log(JSON.stringify({ ...s, by_kind: undefined }, null, 2));
  console.log(`
requests ${s.requests} (${Object.entries(s.by_kind).map(([k, v]) => `${k} ${v.n}: p50 ${v.p50_ms} / p99 ${v.p99_ms} ms`).join("; ")})
RSS slope after warm-up, through the floor of each ${s.floor_bucket_s} s: ${s.rss_slope_mib_per_hour} MiB/hour (anon ${s.rss_anon_slope_mib_per_hour}, file ${s.rss_file_slope_mib_per_hour}, heap ${s.heap_used_slope_mib_per_hour}; through every sample: RSS ${s.rss_every_sample_slope_mib_per_hour}, heap ${s.heap_used_every_sample_slope_mib_per_hour}) — target < ${TARGETS.rss_slope_mib_per_hour}: ${s.met.rss_slope ? "met" : "NOT MET"}
p99 drift: ${s.p99_first_window_ms} → ${s.p99_last_window_ms} ms (${s.p99_drift_percent} %, windows of ${s.p99_window_minutes} min) — target < ${TARGETS.p99_drift_percent} %: ${s.met.p99_drift ? "met" : "NOT MET"}
errors: ${s.errors.total}, dropped: ${s.dropped} — target 0: ${s.met.zero_errors ? "met" : "NOT MET"}${s.stalled_at_s === undefined ? "" : ` — the server stopped answering at t ${s.stalled_at_s} s`}
fds before / after warm-up / end / after load: ${s.fds.before_load} / ${s.fds.after_warmup} / ${s.fds.end} / ${s.fds.after_load}; handles ${s.active_handles.before_load} / ${s.active_handles.after_warmup} / ${s.active_handles.end} / ${s.active_handles.after_load}
other processes used ${Math.round(s.other_processes_cpu_share_mean * 100)} % of the CPUs on average${s.other_processes_cpu_share_mean > 0.1 ? " — WARNING: busy machine, latency figures are disturbed" : ""}
results: ${path.relative(ROOT, file)}`);
  return Object.values(s.met).every(Boolean) ? 0 : 3;
}

process.exitCode = await main();
