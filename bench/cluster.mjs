// Clustered mode beside a standalone server, on one machine: write throughput and latency through the cluster,
// replication lag between nodes, read throughput with 1, 2 and 3 serving nodes, and how long a fresh node takes to
// catch up with the log.
//
// Usage: make bench-cluster   (or, after make build: node bench/cluster.mjs)
// Env:   CLUSTER_ENTRIES          entries preloaded for the read and catch-up phases (default 100000)
//        CLUSTER_BATCH            items per BatchInsert of the preload (default 200: a command stays far under NATS's
//                                 1 MB max_payload)
//        CLUSTER_PRELOAD_INFLIGHT preload requests outstanding (default 6, spread over the nodes)
//        CLUSTER_TENANTS          users writing and reading (default 6); CLUSTER_SHARD_COUNT tenant shards (default 6)
//        CLUSTER_WRITE_CLIENTS    concurrent Remember clients (default 16); CLUSTER_READ_CLIENTS query clients (12)
//        CLUSTER_SECONDS          measured seconds per load (default 10), after CLUSTER_WARMUP_SECONDS (default 2)
//        CLUSTER_LAG_PROBES       sequential replication-lag probes on an idle cluster (default 300)
//        BENCH_SERVER, BENCH_KEEP_DATA, SERVICE_*   as for the other benchmarks; SERVICE_EMBEDDER defaults to `hashed`
// Writes bench/results/cluster.json. Exit status 0 when every phase ran (errors are counted in the results), 1 on
// failure. Every child (3 nats-server, 3 + 1 Engram nodes, the standalone server) is killed on every exit path.
//
// Setup: a 3-server NATS JetStream cluster (test/harness/nats-cluster.ts's command line, stream replicas 3) and three
// Engram nodes that serve every shard, each its own process and data directory, plus a standalone server (no
// SERVICE_CLUSTER_*), all on loopback. The same CLUSTER_TENANTS users are created on both (through node 0 and the
// standalone; on the cluster they live on the global shard), so their data spreads over the tenant shards.
//
// 1. Writes: CLUSTER_WRITE_CLIENTS closed-loop clients (each sends its next request once the last is answered), each
//    one tenant's key, POST /v2/control/remember (one entry, synchronous: acknowledged once replicated and applied on
//    the writing node). Over the cluster client c writes through node (c + ⌊c / tenants⌋) mod 3, so every tenant is
//    written through several nodes (the shards' optimistic concurrency sees real conflicts). The standalone server
//    gets the same clients.
// 2. Replication lag: a Remember on node A; once acknowledged, a Query on node B = A + 1 carrying the write's
//    consistency token (engram-consistency-token). B holds the read until it has applied the token's position and
//    its indexes have heard it, then answers; then the same query again on B without the token (the entry is now
//    there: the read's own cost, "floor"). The lag estimate of one probe is (token read answered − write
//    acknowledged) − that probe's floor, clamped at 0. The probe also checks that the entry is in the answer. Run on
//    an idle cluster (sequential probes) and beside the write load of phase 1.
// 3. Preload: CLUSTER_ENTRIES synthetic entries (bench/lib/corpus.mjs), tenant i mod tenants into run bench-<tenant>,
//    through POST /v2/control/batch_insert in batches of CLUSTER_BATCH spread over the three nodes; the same into the
//    standalone server. Every node is then read with the merged token of every write and left to go idle.
// 4. Reads: CLUSTER_READ_CLIENTS closed-loop clients of POST /v2/control/query (limit 10, each client one tenant's
//    run and queries drawn from that tenant's entries) spread over 1, 2 and 3 nodes (all three keep running: the
//    cluster's other nodes idle, the standalone idle), and against the standalone.
// 5. Catch-up: the standalone is stopped; a fourth node with an empty data directory is started and timed from spawn
//    until /readyz answers 200 (a node catches up on every shard before it listens), and until a Query carrying the
//    merged token of every write made in the run answers 200 on it.
// CPU used by each group of processes (Engram nodes, NATS servers, this load generator) is read from /proc per phase,
// and other processes' share of the CPUs is recorded (bench/lib/machine.mjs); phases are not repeated.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { ApiError, round, summarize } from "./lib/api.mjs";
import { Corpus, vocabulary } from "./lib/corpus.mjs";
import { closedLoop } from "./lib/load-gen.mjs";
import { interferenceMonitor, machine, waitQuietMachine, writeResults } from "./lib/machine.mjs";
import { startNatsCluster } from "./lib/nats-cluster.mjs";
import { memoryMib } from "./lib/process-stats.mjs";
import { ROOT, cpuSeconds, freePort, mintAdminKey, sleep, startServer, stopServer, tempDir } from "./lib/server.mjs";

const int = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const ENTRIES = int("CLUSTER_ENTRIES", 100_000);
const BATCH = int("CLUSTER_BATCH", 200);
const PRELOAD_INFLIGHT = int("CLUSTER_PRELOAD_INFLIGHT", 6);
const TENANTS = int("CLUSTER_TENANTS", 6);
const SHARD_COUNT = int("CLUSTER_SHARD_COUNT", 6);
const WRITE_CLIENTS = int("CLUSTER_WRITE_CLIENTS", 16);
const READ_CLIENTS = int("CLUSTER_READ_CLIENTS", 12);
const SECONDS = int("CLUSTER_SECONDS", 10);
const WARMUP_SECONDS = Number(process.env.CLUSTER_WARMUP_SECONDS ?? 2);
const LAG_PROBES = int("CLUSTER_LAG_PROBES", 300);
const EMBEDDER = process.env.SERVICE_EMBEDDER ?? "hashed";
/** Before each measured phase, wait at most this long for other processes to leave the CPUs (the run goes on anyway). */
const QUIET_WAIT_S = Number(process.env.CLUSTER_QUIET_WAIT_S ?? 10);
const NODES = 3;
/** Extra node arguments for the cluster's nodes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), for diagnosis. */
const NODE_ARGS = (process.env.CLUSTER_NODE_ARGS ?? "").split(" ").filter(Boolean);
const REQUEST_TIMEOUT_MS = 60_000;
const TOKEN_HEADER = "engram-consistency-token";

const started = performance.now();
const log = (msg) => process.stderr.write(`[cluster ${Math.round((performance.now() - started) / 1000).toString().padStart(4)} s] ${msg}\n`);

/**
 * An HTTP/JSON client of one server with a keep-alive pool; `post` resolves with { body, token } of a 2xx answer (body
 * parsed unless `parse` is false) and rejects with ApiError otherwise, or on a timeout.
 */
function client(server, sockets) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, timeout: 5000 });
  const url = new URL(server.base);
  const post = (route, body, key, { token, parse = true } = {}) =>
    new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) };
      if (token) headers[TOKEN_HEADER] = token;
      const req = http.request({ agent, host: url.hostname, port: url.port, method: "POST", path: route, headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode < 200 || res.statusCode >= 300) return reject(new ApiError(`${server.base}${route}`, res.statusCode, text));
          try {
            resolve({ body: parse ? JSON.parse(text) : undefined, token: res.headers[TOKEN_HEADER] });
          } catch (e) {
            reject(e);
          }
        });
      });
      req.on("timeout", () => req.destroy(Object.assign(new Error(`${route}: no answer within ${REQUEST_TIMEOUT_MS} ms`), { name: "TimeoutError" })));
      req.on("error", reject);
      req.end(payload);
    });
  return { post, close: () => agent.destroy() };
}

/** The highest position per shard of every consistency token seen: a read carrying it waits for all of them. */
class Positions {
  #max = new Map();
  note(token) {
    if (typeof token !== "string" || token === "") return;
    for (const part of token.split(",")) {
      const [shard, seq] = part.split(":").map(Number);
      if (seq > (this.#max.get(shard) ?? 0)) this.#max.set(shard, seq);
    }
  }
  get shards() {
    return [...this.#max.keys()].sort((a, b) => a - b);
  }
  token() {
    return [...this.#max].map(([shard, seq]) => `${shard}:${seq}`).join(",");
  }
}

/** Whole-machine busy and total CPU seconds since boot (/proc/stat). */
function machineCpu() {
  const v = (/^cpu\s+(.*)$/m.exec(fsRead("/proc/stat"))?.[1] ?? "").trim().split(/\s+/).map(Number);
  const total = v.reduce((a, b) => a + b, 0) / 100;
  return { busy: total - (v[3] + (v[4] ?? 0)) / 100, total };
}
function fsRead(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/**
 * Measures, over a phase, the cores used by each group of processes (CPU seconds / wall seconds), the machine's busy
 * share, and other processes' share of the CPUs.
 */
function cpuWatch(groups) {
  const read = () => Object.fromEntries(Object.entries(groups).map(([name, fn]) => [name, fn()]));
  const t0 = performance.now();
  const first = read();
  const sys0 = machineCpu();
  const others = interferenceMonitor();
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const last = read();
    const sys1 = machineCpu();
    const cores = Object.fromEntries(Object.keys(groups).map((name) => [name, round((last[name] - first[name]) / wall, 2)]));
    return {
      cores_used: cores,
      machine_busy_share: round((sys1.busy - sys0.busy) / Math.max(1e-9, sys1.total - sys0.total), 3),
      other_processes_cpu_share: others.stop().other_processes_cpu_share_mean,
    };
  };
}

const benchCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const pidsCpu = (pids) => () => pids().reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);

/**
 * Waits until a server uses under 0.15 of a core for 2 s (its background indexing over), at most 300 s; resolves with
 * the time waited. Not waitIdle's 5 %: an idle cluster node polls the log and uses 3–5 % of a core on its own.
 */
async function settle(pid, { maxCores = 0.15, quietMs = 2000, timeoutMs = 300_000 } = {}) {
  const t0 = performance.now();
  let last = cpuSeconds(pid);
  let quietSince = t0;
  while (performance.now() - t0 < timeoutMs) {
    await sleep(500);
    const now = cpuSeconds(pid);
    if (now === undefined || last === undefined) break;
    if (now - last > maxCores * 0.5) quietSince = performance.now();
    last = now;
    if (performance.now() - quietSince >= quietMs) return performance.now() - t0 - quietMs;
  }
  return performance.now() - t0;
}

function latency(values) {
  const s = summarize(values);
  return { n: s.n, p50_ms: s.p50_ms, p90_ms: s.p90_ms, p99_ms: s.p99_ms, max_ms: s.max_ms };
}

async function main() {
  const root = tempDir("cluster");
  const adminKey = mintAdminKey();
  log(`NATS cluster, 3 Engram nodes and a standalone server; embedder ${EMBEDDER}; ${ENTRIES} entries preloaded`);
  const nats = await startNatsCluster(root, 3);
  const common = { SERVICE_EMBEDDER: EMBEDDER, SERVICE_LOG_LEVEL: process.env.SERVICE_LOG_LEVEL ?? "warn" };
  const startNode = async (i) => {
    const port = await freePort();
    return startServer({
      dataDir: path.join(root, `node${i}`),
      key: adminKey,
      port,
      readyTimeoutMs: 900_000,
      nodeArgs: NODE_ARGS,
      env: {
        ...common,
        SERVICE_CLUSTER_NATS_URL: nats.urls.join(","),
        SERVICE_CLUSTER_NODE_ID: `node${i}`,
        SERVICE_CLUSTER_SHARD_COUNT: String(SHARD_COUNT),
        SERVICE_CLUSTER_READ_WAIT_MS: "30000",
      },
    });
  };
  const nodes = await Promise.all(Array.from({ length: NODES }, (_, i) => startNode(i)));
  const standalone = await startServer({ dataDir: path.join(root, "standalone"), key: adminKey, env: common });
  log(`ready: nodes ${nodes.map((n) => n.port).join(", ")}, standalone ${standalone.port}, ${nats.version}`);

  const positions = new Positions();
  /** Writes the cluster acknowledged (entries, users), to compare with the commands in the log. */
  const acked = { writes: 0, entries: 0 };
  const nodeClients = nodes.map((n) => client(n, 64));
  const standaloneClient = client(standalone, 64);
  const allClients = [...nodeClients, standaloneClient];

  // Tenants: the same users on the cluster (created through node 0) and on the standalone server.
  const clusterKeys = [];
  const standaloneKeys = [];
  for (let t = 0; t < TENANTS; t++) {
    const made = await nodeClients[0].post("/v2/core/auth/users", { username: `tenant${t}` }, adminKey);
    positions.note(made.token);
    acked.writes++;
    clusterKeys.push(made.body.api_key);
    standaloneKeys.push((await standaloneClient.post("/v2/core/auth/users", { username: `tenant${t}` }, adminKey)).body.api_key);
  }
  // Every node knows every key once it has applied the users' creation.
  for (const c of nodeClients) for (const key of clusterKeys) await c.post("/v2/control/query", { run_id: "none", query: "nothing" }, key, { token: positions.token() });

  const words = vocabulary(path.join(ROOT, "../shared/data/locomo_dev.json"));
  const corpus = new Corpus(words, 42);
  const writeTexts = corpus.entries(20_000);
  const results = {
    benchmark: "cluster",
    machine: machine(),
    nats_server: nats.version,
    settings: { entries: ENTRIES, batch: BATCH, preload_inflight: PRELOAD_INFLIGHT, tenants: TENANTS, shard_count: SHARD_COUNT, write_clients: WRITE_CLIENTS, read_clients: READ_CLIENTS, seconds: SECONDS, warmup_seconds: WARMUP_SECONDS, lag_probes: LAG_PROBES, embedder: EMBEDDER, stream_replicas: 3, nodes: NODES },
  };
  const groups = {
    engram_nodes: pidsCpu(() => nodes.map((n) => n.pid)),
    ...Object.fromEntries(nodes.map((n, i) => [`node${i}`, pidsCpu(() => [n.pid])])),
    standalone: pidsCpu(() => (standalone.alive() ? [standalone.pid] : [])),
    nats_servers: nats.cpuSeconds,
    load_generator: benchCpu,
  };

  // 1. Write throughput and latency.
  let nextText = 0;
  const writeLoad = (clients, keys, { note }) =>
    closedLoop({
      concurrency: WRITE_CLIENTS,
      warmupMs: WARMUP_SECONDS * 1000,
      durationMs: SECONDS * 1000,
      op: async (c) => {
        const tenant = c % TENANTS;
        const via = clients[(c + Math.floor(c / TENANTS)) % clients.length];
        const res = await via.post("/v2/control/remember", { session_id: `writes-${tenant}`, content: writeTexts[nextText++ % writeTexts.length] }, keys[tenant]);
        if (res.body.success !== true) throw Object.assign(new Error(`remember: ${JSON.stringify(res.body).slice(0, 200)}`), { name: "NotSuccessful" });
        if (note) {
          positions.note(res.token);
          acked.writes++;
          acked.entries++;
        }
      },
    });
  const measured = async (label, fn) => {
    const quiet = await waitQuietMachine(QUIET_WAIT_S * 1000);
    log(`${label}…${quiet.quiet ? "" : ` (machine not quiet after ${QUIET_WAIT_S} s: measuring anyway)`}`);
    const watch = cpuWatch(groups);
    const value = await fn();
    return { ...value, cpu: watch() };
  };
  results.writes = {
    standalone: await measured("writes, standalone", () => writeLoad([standaloneClient], standaloneKeys, { note: false })),
    cluster: await measured("writes, cluster (3 nodes)", () => writeLoad(nodeClients, clusterKeys, { note: true })),
    // Diagnostic: every write through one node, so that no two nodes compute a transaction of the same shard at once.
    cluster_through_node0: await measured("writes, cluster, all through node 0", () => writeLoad(nodeClients.slice(0, 1), clusterKeys, { note: true })),
  };
  results.writes.shards_written = positions.shards;
  for (const [name, w] of Object.entries(results.writes)) {
    if (!w.cpu) continue;
    const cores = name === "standalone" ? w.cpu.cores_used.standalone : w.cpu.cores_used.engram_nodes + w.cpu.cores_used.nats_servers;
    w.server_cpu_ms_per_write = round((cores * 1000) / w.ops_per_s, 2);
  }

  // 2. Replication lag: acknowledged on A, read with its token on B.
  let probeId = 0;
  const probe = async () => {
    const i = probeId++;
    const tenant = i % TENANTS;
    const a = nodeClients[i % NODES];
    const b = nodeClients[(i + 1) % NODES];
    const key = clusterKeys[tenant];
    const marker = `lagq${i}x`;
    const wrote = await a.post("/v2/control/remember", { session_id: `lag-${tenant}`, content: `Probe ${i} carries the marker ${marker}.` }, key);
    const ackedAt = performance.now();
    positions.note(wrote.token);
    acked.writes++;
    acked.entries++;
    const query = { run_id: `lag-${tenant}`, query: marker, limit: 5 };
    const read = await b.post("/v2/control/query", query, key, { token: wrote.token });
    const answered = performance.now();
    const again = await b.post("/v2/control/query", query, key, { parse: false });
    const floor = performance.now() - answered;
    void again;
    const found = (read.body.evidence ?? []).some((e) => e.id === wrote.body.entry_id);
    return { raw: answered - ackedAt, floor, found };
  };
  const lagSummary = (samples, errors) => ({
    probes: samples.length,
    errors,
    entry_missing_after_token_read: samples.filter((s) => !s.found).length,
    ack_to_token_read_answered_ms: latency(samples.map((s) => s.raw)),
    floor_read_ms: latency(samples.map((s) => s.floor)),
    lag_estimate_ms: latency(samples.map((s) => Math.max(0, s.raw - s.floor))),
    share_over_100_ms: round(samples.filter((s) => s.raw - s.floor > 100).length / Math.max(1, samples.length), 3),
  });
  results.replication_lag = {};
  {
    log(`replication lag, idle cluster (${LAG_PROBES} probes)…`);
    const watch = cpuWatch(groups);
    const samples = [];
    let errors = 0;
    for (let n = 0; n < LAG_PROBES; n++) {
      try {
        samples.push(await probe());
      } catch (e) {
        errors++;
        if (errors === 1) log(`lag probe failed: ${e.message}`);
      }
    }
    results.replication_lag.idle = { ...lagSummary(samples, errors), cpu: watch() };
  }
  {
    log(`replication lag beside the write load (${WRITE_CLIENTS} writers)…`);
    const watch = cpuWatch(groups);
    const samples = [];
    let errors = 0;
    let loadDone = false;
    const load = writeLoad(nodeClients, clusterKeys, { note: true }).finally(() => (loadDone = true));
    await sleep(WARMUP_SECONDS * 1000);
    while (!loadDone) {
      try {
        samples.push(await probe());
      } catch (e) {
        errors++;
        if (errors === 1) log(`lag probe failed: ${e.message}`);
      }
    }
    const writes = await load;
    results.replication_lag.under_write_load = { ...lagSummary(samples, errors), writes_per_s_meanwhile: round(writes.ops_per_s, 1), write_errors: writes.errors, cpu: watch() };
  }

  // 3. Preload through the cluster, then into the standalone server.
  const entries = corpus.entries(ENTRIES);
  const byTenant = Array.from({ length: TENANTS }, () => []);
  entries.forEach((text, i) => byTenant[i % TENANTS].push(text));
  const batches = [];
  // Tenants interleaved, so that every shard is written all along.
  for (let i = 0; i < byTenant[0].length; i += BATCH) {
    for (let t = 0; t < TENANTS; t++) if (i < byTenant[t].length) batches.push({ tenant: t, items: byTenant[t].slice(i, i + BATCH).map((text) => ({ text })) });
  }
  const preload = async (clients, keys, note) => {
    const t0 = performance.now();
    const latencies = [];
    let next = 0;
    let retried = 0;
    const worker = async (w) => {
      while (next < batches.length) {
        const b = next++;
        const { tenant, items } = batches[b];
        const via = clients[(b + w) % clients.length];
        for (let attempt = 1; ; attempt++) {
          const s = performance.now();
          try {
            const res = await via.post("/v2/control/batch_insert", { run_id: `bench-${tenant}`, items }, keys[tenant]);
            if (res.body.success !== true || res.body.count !== items.length) throw new Error(`batch_insert: ${res.body.message}`);
            latencies.push(performance.now() - s);
            if (note) {
              positions.note(res.token);
              acked.writes++;
              acked.entries += items.length;
            }
            break;
          } catch (e) {
            // A node that could not reach the log in time answers 503 and says to retry.
            if (!(e instanceof ApiError && e.status === 503) || attempt >= 5) throw e;
            retried++;
            await sleep(200 * attempt);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: PRELOAD_INFLIGHT }, (_, w) => worker(w)));
    const seconds = (performance.now() - t0) / 1000;
    return { entries: ENTRIES, requests: batches.length, seconds: round(seconds, 1), entries_per_s: round(ENTRIES / seconds, 0), request_latency_ms: latency(latencies), retried_503: retried };
  };
  // Each preload is followed by its background indexing (vector graphs) before anything else is measured.
  const idle = async (servers) => (await Promise.all(servers.map((s) => settle(s.pid)))).map(Math.round);
  results.preload = { standalone: await measured(`preload ${ENTRIES} entries into the standalone server`, () => preload([standaloneClient], standaloneKeys, false)) };
  results.preload.standalone.idle_after_ms = await idle([standalone]);
  results.preload.cluster = await measured(`preload ${ENTRIES} entries through the cluster (${batches.length} × BatchInsert)`, () => preload(nodeClients, clusterKeys, true));
  log("every node applies every write; then waiting for background indexing to finish…");
  const everything = positions.token();
  for (const c of nodeClients) for (const key of clusterKeys) await c.post("/v2/control/query", { run_id: "none", query: "nothing" }, key, { token: everything });
  results.preload.cluster.idle_after_ms = await idle(nodes);
  results.preload.node_memory_mib = nodes.map((n) => round(memoryMib(n.pid).rss, 0));
  results.preload.standalone_memory_mib = round(memoryMib(standalone.pid).rss, 0);

  // 4. Read throughput over 1, 2 and 3 serving nodes, and the standalone server.
  const queriesByTenant = byTenant.map((list) => new Corpus(words, 7).queries(list, 200));
  const readLoad = (clients, keys) =>
    closedLoop({
      concurrency: READ_CLIENTS,
      warmupMs: WARMUP_SECONDS * 1000,
      durationMs: SECONDS * 1000,
      op: async (c, i) => {
        const tenant = c % TENANTS;
        const queries = queriesByTenant[tenant];
        await clients[c % clients.length].post("/v2/control/query", { run_id: `bench-${tenant}`, query: queries[(c * 7919 + i) % queries.length], limit: 10 }, keys[tenant], { parse: false });
      },
    });
  results.reads = {
    standalone: await measured("reads, standalone", () => readLoad([standaloneClient], standaloneKeys)),
  };
  for (let k = 1; k <= NODES; k++) results.reads[`nodes_${k}`] = await measured(`reads, ${k} serving node(s)`, () => readLoad(nodeClients.slice(0, k), clusterKeys));
  for (const [name, r] of Object.entries(results.reads)) {
    r.ratio_to_1_node = round(r.ops_per_s / results.reads.nodes_1.ops_per_s, 2);
    const serverCores = name === "standalone" ? r.cpu.cores_used.standalone : r.cpu.cores_used.engram_nodes;
    r.queries_per_server_cpu_second = round(r.ops_per_s / serverCores, 0);
  }

  // 5. Catch-up of a fresh node.
  await stopServer(standalone);
  const final = positions.token();
  // The log is one stream per shard (ENGRAM_LOG_<shard>): summed.
  const streams = Object.entries((await nats.streamState()) ?? {}).filter(([name]) => /^ENGRAM_LOG_\d+$/.test(name));
  const stream = streams.length === 0 ? undefined : { messages: streams.reduce((n, [, s]) => n + (s.messages ?? 0), 0), bytes: streams.reduce((n, [, s]) => n + (s.bytes ?? 0), 0) };
  log(`catch-up: a fresh node applies the log (${stream?.messages ?? "?"} commands, ${round((stream?.bytes ?? NaN) / 2 ** 20, 0)} MiB)…`);
  let late;
  {
    const watch = cpuWatch({ ...groups, new_node: pidsCpu(() => (late?.alive() ? [late.pid] : [])) });
    const t0 = performance.now();
    late = await startNode(NODES);
    const readyMs = performance.now() - t0;
    const lateClient = client(late, 4);
    allClients.push(lateClient);
    let attempts = 0;
    for (;;) {
      attempts++;
      try {
        await lateClient.post("/v2/control/query", { run_id: "bench-0", query: "nothing" }, clusterKeys[0], { token: final, parse: false });
        break;
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 503) || attempts >= 30) throw e;
      }
    }
    const tokenReadMs = performance.now() - t0;
    // Every node holds the same runs with the same entry counts, and each preloaded run all of its entries.
    const runsOf = async (c, key) => {
      const { body } = await c.post("/engram.v2.RunsService/ListRuns", { limit: 500 }, key, { token: final });
      return JSON.stringify((body.runs ?? []).map((run) => [run.runId ?? run.run_id, run.entryCount ?? run.entry_count]).sort());
    };
    let mismatched = 0;
    let incomplete = 0;
    for (let t = 0; t < TENANTS; t++) {
      const listings = await Promise.all([...nodeClients, lateClient].map((c) => runsOf(c, clusterKeys[t])));
      if (new Set(listings).size !== 1) mismatched++;
      const counts = new Map(JSON.parse(listings[listings.length - 1]));
      if (counts.get(`bench-${t}`) !== byTenant[t].length) incomplete++;
    }
    results.catch_up = {
      log_commands: stream?.messages,
      log_mib: round((stream?.bytes ?? NaN) / 2 ** 20, 1),
      acknowledged_writes: acked.writes,
      entries_in_cluster: acked.entries,
      spawn_to_ready_ms: Math.round(readyMs),
      spawn_to_token_read_ms: Math.round(tokenReadMs),
      token_read_attempts: attempts,
      tenants_whose_runs_differ_between_nodes: mismatched,
      tenants_missing_preloaded_entries_on_new_node: incomplete,
      memory_mib: round(memoryMib(late.pid).rss, 0),
      cpu: watch(),
    };
  }

  for (const c of allClients) c.close();
  log("stopping nodes and NATS…");
  await Promise.all([...nodes, late].map((n) => stopServer(n, 15_000)));
  await nats.stop();
  results.total_seconds = round((performance.now() - started) / 1000, 0);
  const file = writeResults("cluster.json", results);
  printTable(results);
  log(`results: ${path.relative(ROOT, file)}`);
}

function printTable(r) {
  const rows = [];
  const add = (...cells) => rows.push(cells.map((c) => (c === undefined || c === null ? "" : String(c))));
  const w = r.writes;
  add("measure", "cluster (3 nodes)", "standalone", "cluster / standalone");
  add(`writes/s (Remember, ${r.settings.write_clients} clients)`, round(w.cluster.ops_per_s, 0), round(w.standalone.ops_per_s, 0), round(w.cluster.ops_per_s / w.standalone.ops_per_s, 2) + "×");
  add("write p50 / p99 ms", `${w.cluster.latency_ms.p50_ms} / ${w.cluster.latency_ms.p99_ms}`, `${w.standalone.latency_ms.p50_ms} / ${w.standalone.latency_ms.p99_ms}`, round(w.cluster.latency_ms.p99_ms / w.standalone.latency_ms.p99_ms, 2) + "× p99");
  add("write errors", w.cluster.errors.total, w.standalone.errors.total, "");
  add("server CPU ms per write (cluster: nodes + NATS)", w.cluster.server_cpu_ms_per_write, w.standalone.server_cpu_ms_per_write, round(w.cluster.server_cpu_ms_per_write / w.standalone.server_cpu_ms_per_write, 1) + "×");
  add("writes/s, cluster, all through node 0", round(w.cluster_through_node0.ops_per_s, 0), "", round(w.cluster_through_node0.ops_per_s / w.standalone.ops_per_s, 2) + "×");
  add("  p50 / p99 ms", `${w.cluster_through_node0.latency_ms.p50_ms} / ${w.cluster_through_node0.latency_ms.p99_ms}`, "", "");
  add(`preload entries/s (BatchInsert ×${r.settings.batch})`, r.preload.cluster.entries_per_s, r.preload.standalone.entries_per_s, round(r.preload.cluster.entries_per_s / r.preload.standalone.entries_per_s, 2) + "×");
  for (const [name, l] of Object.entries(r.replication_lag)) {
    add(`lag ${name}: ack → token read p50 / p99 ms`, `${l.ack_to_token_read_answered_ms.p50_ms} / ${l.ack_to_token_read_answered_ms.p99_ms}`, "", "");
    add(`lag ${name}: floor read p50 / p99 ms`, `${l.floor_read_ms.p50_ms} / ${l.floor_read_ms.p99_ms}`, "", "");
    add(`lag ${name}: estimate p50 / p99 ms`, `${l.lag_estimate_ms.p50_ms} / ${l.lag_estimate_ms.p99_ms}`, "", `${l.probes} probes, ${l.errors} errors, ${l.entry_missing_after_token_read} missing, ${Math.round(l.share_over_100_ms * 100)} % over 100 ms`);
  }
  for (const [name, x] of Object.entries(r.reads)) {
    add(`queries/s ${name} (${r.settings.read_clients} clients)`, round(x.ops_per_s, 0), `p50/p99 ${x.latency_ms.p50_ms}/${x.latency_ms.p99_ms} ms`, `${x.ratio_to_1_node}× 1 node; ${x.queries_per_server_cpu_second} q per server CPU-s; others ${Math.round(x.cpu.other_processes_cpu_share * 100)} %`);
  }
  const c = r.catch_up;
  add(`catch-up: ${c.entries_in_cluster} entries, ${c.log_commands} commands → /readyz 200`, `${round(c.spawn_to_ready_ms / 1000, 1)} s`, "", "");
  add("catch-up: → read with final token", `${round(c.spawn_to_token_read_ms / 1000, 1)} s`, "", `runs differ for ${c.tenants_whose_runs_differ_between_nodes} tenants, incomplete for ${c.tenants_missing_preloaded_entries_on_new_node}`);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const row of rows) process.stdout.write(`${row.map((cell, i) => cell.padEnd(widths[i])).join("  ")}\n`);
}

main().catch((e) => {
  process.stderr.write(`bench-cluster failed: ${e?.stack ?? e}\n`);
  process.exit(1);
});
