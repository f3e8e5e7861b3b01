// Does cost accounting slow queries down? An A/B of query throughput between this build (every authenticated RPC runs
// in a cost meter and answers an `engram-cost` header) and a build of the commit before it, both with the embedded
// default (no provider: the meter's fixed cost alone is what is measured), same data, measured in alternating rounds
// so that a change in the machine's load hits both sides alike.
//
// Usage: node scripts/build.mjs && node bench/cost-meter.mjs
// Env:   BENCH_BASE_ROOT      worktree of the baseline build, already built (default /tmp/base-cost; make it with
//                             `git worktree add /tmp/base-cost b2cdb53`, a node_modules symlink and its build)
//        BENCH_COST_ENTRIES   entries seeded in each server (default 2000)
//        BENCH_COST_ROUNDS    alternating rounds (default 10)
//        BENCH_COST_SECONDS   length of one measured window per server and round (default 5)
//        BENCH_COST_CLIENTS   concurrent closed-loop clients (default 8)
// Writes bench/results/cost-meter.json.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ingestAll, round } from "./lib/api.mjs";
import { closedLoop } from "./lib/load-gen.mjs";
import { interferenceMonitor, machine, writeResults } from "./lib/machine.mjs";
import { mintAdminKey, startServer, tempDir, SERVER_ENTRY } from "./lib/server.mjs";

const BASE_ROOT = process.env.BENCH_BASE_ROOT ?? "/tmp/base-cost";
const ENTRIES = Number(process.env.BENCH_COST_ENTRIES ?? 2000);
const ROUNDS = Number(process.env.BENCH_COST_ROUNDS ?? 10);
const SECONDS = Number(process.env.BENCH_COST_SECONDS ?? 5);
const CLIENTS = Number(process.env.BENCH_COST_CLIENTS ?? 8);
const RUN_ID = "bench-run";
const WORDS = ["deploy", "ledger", "cache", "rollback", "schema", "index", "token", "queue", "replica", "backup", "alert", "quota"];

const log = (line) => process.stderr.write(`${line}\n`);

function text(i) {
  return `The ${WORDS[i % WORDS.length]} service ${i} uses ${WORDS[(i * 5 + 1) % WORDS.length]} with ${WORDS[(i * 7 + 3) % WORDS.length]} on release ${i % 97}.`;
}

async function query(server, i) {
  const res = await fetch(`${server.base}/v2/control/query`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: RUN_ID, query: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} release ${i % 97}`, limit: 10 }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`query answered ${res.status}`);
  return res.headers.get("engram-cost");
}

async function start(name, entry, cwd) {
  const server = await startServer({ dataDir: tempDir(`cost-${name}`), key: mintAdminKey(), entry, cwd });
  const items = Array.from({ length: ENTRIES }, (_, i) => ({ text: text(i) }));
  await ingestAll(server, RUN_ID, items, { timeoutMs: 600_000 });
  return server;
}

const sides = {
  base: await start("base", path.join(BASE_ROOT, "dist/src/serve.js"), BASE_ROOT),
  metered: await start("metered", SERVER_ENTRY, undefined),
};
log(`seeded ${ENTRIES} entries in each server`);
const header = await query(sides.metered, 0);
if (header === null) throw new Error("this build answered without an engram-cost header");
if ((await query(sides.base, 0)) !== null) throw new Error("the baseline build already answers an engram-cost header: wrong baseline");
// Warm-up: JIT and caches on both sides.
for (const server of Object.values(sides)) await closedLoop({ concurrency: CLIENTS, warmupMs: 0, durationMs: 2000, op: (_c, i) => query(server, i) });

const rounds = [];
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? ["base", "metered"] : ["metered", "base"];
  const figures = {};
  for (const name of order) {
    const monitor = interferenceMonitor();
    const result = await closedLoop({ concurrency: CLIENTS, warmupMs: 500, durationMs: SECONDS * 1000, op: (_c, i) => query(sides[name], i) });
    figures[name] = { ops_per_s: round(result.ops_per_s, 1), p50_ms: result.latency_ms.p50_ms, p99_ms: result.latency_ms.p99_ms, errors: result.errors, load: monitor.stop() };
  }
  const ratio = figures.metered.ops_per_s / figures.base.ops_per_s;
  rounds.push({ ...figures, ratio: round(ratio, 3) });
  log(`round ${r + 1}: base ${figures.base.ops_per_s}/s, metered ${figures.metered.ops_per_s}/s, ratio ${ratio.toFixed(3)}`);
}

// The meter's own price, in process and without the noise of a shared machine's scheduling: what the cost interceptor
// adds to one RPC (a meter, AsyncLocalStorage.run around the handler, the header's value), beside the same handler
// called bare, in alternating rounds.
const { CostMeter, metered, costHeaderValue } = await import(pathToFileURL(path.join(path.dirname(SERVER_ENTRY), "platform/cost-meter.js")).href);
async function handler() {
  // A few awaits, as a real handler has (each one pays the context propagation).
  for (let i = 0; i < 4; i++) await Promise.resolve(i);
  return i0++;
}
let i0 = 0;
async function perCallNs(wrapped, n) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    if (wrapped) {
      const meter = new CostMeter(() => undefined);
      await metered(meter, handler);
      costHeaderValue(meter.totals);
    } else {
      await handler();
    }
  }
  return Number(process.hrtime.bigint() - t0) / n;
}
const MICRO_CALLS = 200_000;
await perCallNs(false, MICRO_CALLS);
await perCallNs(true, MICRO_CALLS);
const micro = [];
for (let r = 0; r < 7; r++) micro.push({ bare_ns: await perCallNs(false, MICRO_CALLS), metered_ns: await perCallNs(true, MICRO_CALLS) });

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const results = {
  machine: machine(),
  baseline: BASE_ROOT,
  entries: ENTRIES,
  rounds_measured: ROUNDS,
  seconds_per_window: SECONDS,
  clients: CLIENTS,
  sample_header: header,
  base_ops_per_s_median: round(median(rounds.map((r) => r.base.ops_per_s)), 1),
  metered_ops_per_s_median: round(median(rounds.map((r) => r.metered.ops_per_s)), 1),
  ratio_median: round(median(rounds.map((r) => r.ratio)), 3),
  base_p50_ms_median: round(median(rounds.map((r) => r.base.p50_ms)), 2),
  metered_p50_ms_median: round(median(rounds.map((r) => r.metered.p50_ms)), 2),
  rounds,
  meter_overhead_ns_per_call_median: round(median(micro.map((m) => m.metered_ns - m.bare_ns)), 0),
  bare_handler_ns_per_call_median: round(median(micro.map((m) => m.bare_ns)), 0),
  micro_rounds: micro.map((m) => ({ bare_ns: round(m.bare_ns, 0), metered_ns: round(m.metered_ns, 0) })),
};
log(`meter overhead: ${results.meter_overhead_ns_per_call_median} ns a call (bare handler ${results.bare_handler_ns_per_call_median} ns)`);
log(`median ratio metered/base: ${results.ratio_median} (${results.metered_ops_per_s_median} vs ${results.base_ops_per_s_median} queries/s)`);
log(`wrote ${writeResults("cost-meter.json", results)}`);
process.exit(0);
