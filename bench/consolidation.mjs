// The cost of consolidation's on-write near-duplicate check: facts/s through batch_insert with the check on and off
// (SERVICE_CONSOLIDATION), two servers in this process, rounds alternated so both see the same machine. The text is
// agent-like (log lines, paths, hashes, ports, versions), with a share of exact and near repeats that the check merges.
//
// Usage: npx tsc -p tsconfig.build.json && node bench/consolidation.mjs      (not part of `make test` or `make bench`)
// Env:   BENCH_SIZE    facts written per server (default 20000)
//        BENCH_BATCH   facts per batch_insert (default 100)
//        BENCH_REPEAT  share of facts that repeat an earlier one, exactly or with a changed word (default 0.1)
// Writes bench/results/consolidation.json.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { rng } from "./lib/corpus.mjs";
import { startInProcess } from "./lib/in-process.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SIZE = Number(process.env.BENCH_SIZE ?? 20_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 0.1);
const ROUNDS = 4;


const log = (msg) => process.stderr.write(`[consolidation ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const random = rng(7);
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const hex = (n) => Array.from({ length: n }, () => "0123456789abcdef"[Math.floor(random() * 16)]).join("");
const SERVICES = ["billing", "auth", "ingest", "search", "payments", "gateway", "scheduler", "notifier"];
const VERBS = ["failed", "timed out", "succeeded", "was retried", "returned 503", "was rolled back", "hit the rate limit"];

/**
 * One agent-like fact: a tool result, a log line, a config note. Each holds one identifier of its own (a request id,
 * a pid, a hash, a port), so two facts differ at least there: only the deliberate repeats are duplicates, and the
 * rest are the near-misses the check must not merge (same template, same words, another identifier).
 */
function agentText(i) {
  switch (i % 4) {
    case 0:
      return `Deploy of ${pick(SERVICES)} v${1 + (i % 9)}.${i % 17}.${i % 5} ${pick(VERBS)} on host web-${i % 40}.prod.internal (request ${hex(12)})`;
    case 1:
      return `The ${pick(SERVICES)} worker pid ${100_000 + i} writes to /var/log/${pick(SERVICES)}/worker-${i % 64}.log and rotates at 100MB`;
    case 2:
      return `Commit ${hex(10)} changed ${pick(SERVICES)}/src/handlers/${pick(SERVICES)}_${i % 50}.ts; CI run ${10_000 + i} ${pick(VERBS)}`;
    default:
      return `${pick(SERVICES)} connects to postgres at db-${i % 12}.internal:${20_000 + i} with pool size ${8 + (i % 24)}`;
  }
}

/**
 * The facts to write: most new, REPEAT of them a new fact's text again (half verbatim, half with a changed case and a
 * final full stop). Returns them with the number of repeats, which is what the check should merge, no more.
 */
function corpus() {
  const originals = [];
  const facts = [];
  let repeats = 0;
  for (let i = 0; i < SIZE; i++) {
    if (i > 100 && random() < REPEAT) {
      const earlier = originals[Math.floor(random() * originals.length)];
      facts.push(random() < 0.5 ? earlier : `${earlier.replace(/^\w/, (c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()))}.`);
      repeats++;
    } else {
      const text = agentText(i);
      originals.push(text);
      facts.push(text);
    }
  }
  return { facts, repeats };
}

async function startServer(consolidation) {
  const { engram, post, dataDir } = await startInProcess("consolidation", { SERVICE_CONSOLIDATION: consolidation ? "on" : "off" });
  return { engram, post, dataDir, seconds: 0, written: 0 };
}

const { facts, repeats } = corpus();
const servers = { off: await startServer(false), on: await startServer(true) };
try {
  // Batch by batch, the two servers in turn (which goes first alternates): a busy moment of a shared machine costs
  // both alike, and both runs grow at the same pace.
  for (let i = 0, n = 0; i < facts.length; i += BATCH, n++) {
    const items = facts.slice(i, i + BATCH).map((text) => ({ text, entry_type: "fact" }));
    for (const name of n % 2 === 0 ? ["off", "on"] : ["on", "off"]) {
      const server = servers[name];
      const started = performance.now();
      await server.post("/v2/control/batch_insert", { run_id: "agent-run", items });
      server.seconds += (performance.now() - started) / 1000;
      server.written += items.length;
    }
    if ((n + 1) % Math.ceil(facts.length / BATCH / ROUNDS) === 0) log(`${i + items.length} of ${facts.length} facts`);
  }
  const stored = {};
  for (const [name, server] of Object.entries(servers)) {
    stored[name] = (await server.post("/v2/control/activity", { run_id: "agent-run", limit: 1 })).total_visible;
  }
  const rate = (s) => Math.round(s.written / s.seconds);
  const result = {
    facts: SIZE,
    batch: BATCH,
    repeat_share: REPEAT,
    facts_per_s: { off: rate(servers.off), on: rate(servers.on) },
    ratio_on_to_off: Math.round((rate(servers.on) / rate(servers.off)) * 1000) / 1000,
    entries_stored: stored,
    repeats_written: repeats,
    merged: stored.off - stored.on,
  };
  fs.mkdirSync(path.join(ROOT, "bench/results"), { recursive: true });
  fs.writeFileSync(path.join(ROOT, "bench/results/consolidation.json"), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  for (const server of Object.values(servers)) {
    await server.engram.close();
    fs.rmSync(server.dataDir, { recursive: true, force: true });
  }
}
