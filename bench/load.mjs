// Throughput and latency of the built server under 1 to 256 concurrent clients, for query and ingest, over HTTP/JSON
// and gRPC: does it serve every request, and does throughput hold once the server is saturated?
//
// Usage: make bench-load   (or, after make build: node bench/load.mjs)
// Env:   LOAD_ENTRIES          entries seeded into run `bench` before the load (default 20000)
//        LOAD_CONCURRENCY      client counts, comma-separated (default "1,16,64,256")
//        LOAD_SECONDS          measured seconds per cell (default 10), after LOAD_WARMUP_SECONDS (default 2)
//        LOAD_TRANSPORTS       default "http,grpc";  LOAD_WORKLOADS  default "query,ingest"
//        LOAD_INGEST_BATCH     items per batch_insert request (default 10)
//        BENCH_QUIET_WAIT_S, BENCH_ATTEMPTS   the quiet-machine guard (bench/lib/guard.mjs), per cell
//        BENCH_SERVER, SERVICE_*              as for the other benchmarks
// Writes bench/results/load.json. Exit status 0 when every target was met, 3 when a target was missed (the figures
// are still printed and written), 1 on failure.
//
// One server (fresh data dir) is seeded through POST /v2/control/ingest and left to go idle. Then, per workload, per
// client count, per transport ("cell"), that many closed-loop clients (each sends its next request as soon as its last
// is answered) run for warm-up + measured seconds:
//   query   POST /v2/control/query (MemoryService.Query), run `bench`, limit 10, default budget, seeded queries;
//   ingest  POST /v2/control/batch_insert (MemoryService.BatchInsert) of LOAD_INGEST_BATCH new entries into run
//           `load-ingest`: synchronous, so an answer means the entries are durable and searchable. Ingest throughput
//           is these acknowledged durable writes (requests/s and items/s), not the asynchronous Ingest route's job
//           queue, whose acknowledgement only means "queued".
// Every client has a connection of its own on both transports (HTTP: a keep-alive node:http Agent with one socket per
// client; gRPC: a @grpc/grpc-js channel per client with a local subchannel pool, i.e. one HTTP/2 connection each), as
// that many separate agent processes would. Any non-2xx answer, gRPC error, transport error, timeout (30 s) or
// `success: false` is an error. Between cells the server is left to go idle (background vector indexing).
import path from "node:path";
import { ingestAll, round } from "./lib/api.mjs";
import { Corpus, vocabulary } from "./lib/corpus.mjs";
import { disturbed, phaseGuard } from "./lib/guard.mjs";
import { grpcClients } from "./lib/grpc.mjs";
import { httpClient } from "./lib/http-client.mjs";
import { closedLoop } from "./lib/load-gen.mjs";
import { machine, writeResults } from "./lib/machine.mjs";
import { memoryMib, openFds } from "./lib/process-stats.mjs";
import { ROOT, cpuSeconds, mintAdminKey, startServer, tempDir, waitIdle } from "./lib/server.mjs";

const list = (value, fallback) => (value ?? fallback).split(",").map((s) => s.trim()).filter(Boolean);
const ENTRIES = Number(process.env.LOAD_ENTRIES ?? 20_000);
const LEVELS = list(process.env.LOAD_CONCURRENCY, "1,16,64,256").map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env.LOAD_SECONDS ?? 10);
const WARMUP_SECONDS = Number(process.env.LOAD_WARMUP_SECONDS ?? 2);
const TRANSPORTS = list(process.env.LOAD_TRANSPORTS, "http,grpc");
const WORKLOADS = list(process.env.LOAD_WORKLOADS, "query,ingest");
const INGEST_BATCH = Number(process.env.LOAD_INGEST_BATCH ?? 10);
const REQUEST_TIMEOUT_MS = 30_000;
const RUN_ID = "bench";
const INGEST_RUN_ID = "load-ingest";
/** No collapse: throughput at the highest client count is at least this share of the best throughput of any count. */
const MIN_SHARE_OF_PEAK = 0.8;

const log = (msg) => process.stderr.write(`[load ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** `concurrency` clients of one transport, each with its own connection; `op(client, i)` sends one request. */
function clientsFor(server, transport, workload, concurrency, { queries, texts }) {
  let nextText = 0;
  const batch = () =>
    Array.from({ length: INGEST_BATCH }, () => ({ text: texts[nextText++ % texts.length] }));
  const checked = (res) => {
    if (res.success === false) throw Object.assign(new Error(`batch_insert: ${res.message}`), { name: "NotSuccessful" });
    return INGEST_BATCH;
  };
  if (transport === "http") {
    const http = httpClient(server, { sockets: concurrency, timeoutMs: REQUEST_TIMEOUT_MS });
    const op =
      workload === "query"
        ? (client, i) => http.post("/v2/control/query", { run_id: RUN_ID, query: queries[(client * 7919 + i) % queries.length], limit: 10 })
        : async () => checked(await http.post("/v2/control/batch_insert", { run_id: INGEST_RUN_ID, items: batch() }));
    return { op, connections: () => http.openSockets(), close: () => http.close() };
  }
  const grpc = Array.from({ length: concurrency }, () => grpcClients(server, { ownConnection: true, deadlineMs: REQUEST_TIMEOUT_MS }));
  const op =
    workload === "query"
      ? (client, i) => grpc[client].query({ run_id: RUN_ID, query: queries[(client * 7919 + i) % queries.length], limit: 10 })
      : async (client) => checked(await grpc[client].batchInsert({ run_id: INGEST_RUN_ID, items: batch() }));
  return { op, connections: () => undefined, close: () => grpc.forEach((c) => c.close()) };
}

async function cell(server, transport, workload, concurrency, inputs) {
  const clients = clientsFor(server, transport, workload, concurrency, inputs);
  try {
    const cpu0 = { server: cpuSeconds(server.pid), self: process.cpuUsage() };
    const fds0 = openFds(server.pid);
    const t0 = performance.now();
    const result = await closedLoop({ concurrency, warmupMs: WARMUP_SECONDS * 1000, durationMs: SECONDS * 1000, op: clients.op });
    const wall = (performance.now() - t0) / 1000;
    const self = process.cpuUsage(cpu0.self);
    return {
      ...result,
      ops_per_s: round(result.ops_per_s, 1),
      items_per_s: round(result.items_per_s, 1),
      wall_ms: Math.round(result.wall_ms),
      // Shares of one core over the cell: the server is one Node thread; so is this client (HTTP and gRPC work both).
      server_cpu_share: round((cpuSeconds(server.pid) - cpu0.server) / wall, 2),
      client_cpu_share: round((self.user + self.system) / 1e6 / wall, 2),
      client_connections: clients.connections(),
      server_fds: { before: fds0, during_end: openFds(server.pid) },
      server_rss_mib: round(memoryMib(server.pid).rss),
    };
  } finally {
    clients.close();
  }
}

function verdicts(cells) {
  const out = [];
  for (const workload of WORKLOADS) {
    for (const transport of TRANSPORTS) {
      const series = cells.filter((c) => c.workload === workload && c.transport === transport);
      if (series.length === 0) continue;
      const errors = series.reduce((n, c) => n + c.errors.total, 0);
      const peak = series.reduce((best, c) => (c.ops_per_s > best.ops_per_s ? c : best));
      const last = series.reduce((top, c) => (c.concurrency > top.concurrency ? c : top));
      const share = peak.ops_per_s > 0 ? last.ops_per_s / peak.ops_per_s : 0;
      out.push({
        workload,
        transport,
        errors,
        peak_ops_per_s: peak.ops_per_s,
        peak_at_clients: peak.concurrency,
        at_most_clients: last.concurrency,
        share_of_peak_at_most_clients: round(share, 3),
        zero_errors: errors === 0,
        no_collapse: share >= MIN_SHARE_OF_PEAK,
      });
    }
  }
  return out;
}

function table(cells) {
  const rows = [
    "| workload | transport | clients | req/s | items/s | p50 ms | p99 ms | errors | server CPU | client CPU | other processes |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const c of cells) {
    const errs = c.errors.total === 0 ? "0" : `${c.errors.total} (${Object.entries(c.errors.by_kind).map(([k, v]) => `${k} × ${v.count}`).join(", ")})`;
    rows.push(
      `| ${c.workload} | ${c.transport} | ${c.concurrency} | ${c.ops_per_s} | ${c.workload === "ingest" ? c.items_per_s : ""} | ${c.latency_ms.p50_ms} | ${c.latency_ms.p99_ms} | ${errs} | ${Math.round(c.server_cpu_share * 100)} % | ${Math.round(c.client_cpu_share * 100)} % | ${Math.round(c.interference.other_processes_cpu_share_mean * 100)} % |`,
    );
  }
  return rows.join("\n");
}

async function main() {
  const words = vocabulary(path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json"));
  const corpus = new Corpus(words, 42);
  const entries = corpus.entries(ENTRIES);
  const queries = corpus.queries(entries, 500);
  const texts = new Corpus(words, 7).entries(20_000);
  const guard = phaseGuard({ log });

  const server = await startServer({ dataDir: tempDir("load"), key: mintAdminKey() });
  log(`server ready in ${Math.round(server.readyMs)} ms; seeding ${ENTRIES} entries`);
  const seeded = await ingestAll(server, RUN_ID, entries.map((text) => ({ text })), { batch: 1000, inFlight: 1 });
  await waitIdle(server.pid, { quietMs: 1000, timeoutMs: 120_000 });
  log(`seeded in ${Math.round(seeded.totalMs)} ms`);

  const cells = [];
  for (const workload of WORKLOADS) {
    for (const concurrency of LEVELS) {
      // Transports alternate within a client count, so that both see the same amount of ingested data.
      for (const transport of TRANSPORTS) {
        const label = `${workload} ${transport} ×${concurrency}`;
        const result = await guard.guarded(label, async () => {
          await waitIdle(server.pid, { quietMs: 500, timeoutMs: 60_000 });
          return cell(server, transport, workload, concurrency, { queries, texts });
        });
        const interference = guard.records.at(-1);
        cells.push({ workload, transport, concurrency, ...result, interference });
        log(`${label}: ${result.ops_per_s} req/s, p50 ${result.latency_ms.p50_ms} ms, p99 ${result.latency_ms.p99_ms} ms, errors ${result.errors.total}, server CPU ${Math.round(result.server_cpu_share * 100)} %`);
        if (!server.alive()) throw new Error(`server died during ${label}:\n${server.output()}`);
      }
    }
  }
  const rssAfter = memoryMib(server.pid);
  await server.stop();

  const checks = verdicts(cells);
  const busy = guard.records.filter(disturbed);
  const results = {
    benchmark: "load",
    machine: machine(),
    settings: { entries: ENTRIES, levels: LEVELS, seconds: SECONDS, warmup_seconds: WARMUP_SECONDS, ingest_batch: INGEST_BATCH, request_timeout_ms: REQUEST_TIMEOUT_MS, min_share_of_peak: MIN_SHARE_OF_PEAK },
    seed: { entries: ENTRIES, total_ms: Math.round(seeded.totalMs) },
    cells,
    verdicts: checks,
    server_rss_mib_at_end: round(rssAfter.rss),
    disturbed_cells: busy.map((r) => ({ phase: r.phase, other_processes_cpu_share_mean: r.other_processes_cpu_share_mean })),
  };
  const file = writeResults("load.json", results);
  console.log(table(cells));
  console.log("");
  for (const v of checks) {
    console.log(
      `${v.workload} ${v.transport}: errors ${v.errors} (${v.zero_errors ? "met" : "NOT MET"}); peak ${v.peak_ops_per_s} req/s at ${v.peak_at_clients} clients, ` +
        `${Math.round(v.share_of_peak_at_most_clients * 100)} % of it at ${v.at_most_clients} (≥ ${MIN_SHARE_OF_PEAK * 100} %: ${v.no_collapse ? "met" : "NOT MET"})`,
    );
  }
  console.log(
    busy.length === 0
      ? "every cell ran on a quiet machine"
      : `WARNING: other processes used more than ${busy[0].threshold * 100} % of the CPUs during ${busy.map((r) => `${r.phase} (${Math.round(r.other_processes_cpu_share_mean * 100)} %)`).join(", ")}`,
  );
  console.log(`results: ${path.relative(ROOT, file)}`);
  return checks.every((v) => v.zero_errors && v.no_collapse) ? 0 : 3;
}

process.exitCode = await main();
