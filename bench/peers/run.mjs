// Engram side by side with LanceDB (issue 14): the same seeded corpus and queries, one system after the other on a
// quiet machine, each target a ratio measured in the same run.
//
// Usage: make bench-peers   (or: make build && (cd bench/peers && npm ci) && node bench/peers/run.mjs)
// Env:   PEERS_SIZES          entry counts, comma-separated (default "20000,100000,1000000")
//        PEERS_QUERIES        queries per latency series (default 1000)
//        PEERS_CONCURRENCY    clients of the concurrent query series (default 16)
//        PEERS_SYSTEMS        "engram,lancedb" (default), or one of them (e.g. LanceDB alone at 1M)
//        PEERS_SHARED         1 (default): also the shared-vectors run, where the server takes caller vectors;
//                             0: not
//        PEERS_SHARED_MAX     largest size with a shared-vectors run (default 100000)
//        PEERS_RESUME         1: keep the sizes (and recall) already in bench/results/peers.json (whatever systems
//                             they have), measure the rest
//        PEERS_INGEST_INFLIGHT          Engram ingest requests outstanding (default 1)
//        PEERS_LANCE_VECTOR_INDEX_FROM  LanceDB builds an IVF_PQ vector index from this many rows (default 500000)
//        BENCH_QUIET_WAIT_S, BENCH_ATTEMPTS: the quiet-machine guard (bench/lib/guard.mjs); SERVICE_*: to the server
// Writes bench/results/peers.json after each size. Exit status 0 when every target is met, 3 when one is missed, 1 on
// failure.
//
// Method, per size N, Engram first, then LanceDB, never both at once (each system's clients live in a process of
// their own: Engram's in this one over HTTP, LanceDB's in a child process, in-process as LanceDB is used):
//   ingest until searchable, items/s: Engram, POST /v2/control/ingest 1000 items a request until every job
//     completed (its embedder runs in the server); LanceDB 0.37.1, table.add() 1000 rows a call with vectors from
//     Engram's own embedder computed in the timed loop, then optimize() (compaction), the FTS index on the text and,
//     from PEERS_LANCE_VECTOR_INDEX_FROM rows, an IVF_PQ vector index. LanceDB writes without fsync; Engram's
//     acknowledged writes are flushed.
//   queries: the same PEERS_QUERIES queries (20 untimed first), 1 client, then PEERS_CONCURRENCY closed-loop clients:
//     Engram POST /v2/control/query (limit 10) over keep-alive HTTP; LanceDB hybrid search as documented,
//     query().fullTextSearch(q).nearestTo(v).rerank(RRF).limit(10), with v embedded by Engram's embedder in the
//     timed call.
//   memory added by the load: VmRSS once the ingest is done (Engram: and its background work settled) minus before
//     it (Engram: the server's, started empty and idle; LanceDB: the child's, corpus and embedder already loaded, the
//     empty table created); also after both query series, minus the same.
//   start-up to ready on the data left: Engram, spawn until GET /readyz answers 200; LanceDB, spawn a fresh process
//     until it has opened the table and answered one hybrid query. Disk: bytes under each data dir.
//   shared vectors (sizes ≤ PEERS_SHARED_MAX): both systems again, given the same precomputed 384-d vectors (a seeded
//     random projection of Engram's embedder output) for entries and queries, computed before any timing.
// Once: LoCoMo recall@10 (../shared/data/locomo_dev.json), each conversation in its own run / table, as bench/quality.mjs.
import fs from "node:fs";
import path from "node:path";
import { disturbed, phaseGuard } from "../lib/guard.mjs";
import { machine, writeResults } from "../lib/machine.mjs";
import { ROOT } from "../lib/server.mjs";
import { engramRecall, engramSize, sharedVectorsUnsupported } from "./engram-side.mjs";
import { lancedbRecall, lancedbSize } from "./lancedb-client.mjs";
import { table, verdicts } from "./report.mjs";
import { SHARED_DIMENSIONS, digest, engramEmbedder, sharedVectors, workload } from "./workload.mjs";

const SIZES = (process.env.PEERS_SIZES ?? "20000,100000,1000000").split(",").map((s) => Number(s.trim())).filter((n) => n > 0);
const QUERIES = Number(process.env.PEERS_QUERIES ?? 1000);
const CONCURRENCY = Number(process.env.PEERS_CONCURRENCY ?? 16);
const SYSTEMS = new Set((process.env.PEERS_SYSTEMS ?? "engram,lancedb").split(",").map((s) => s.trim()));
const SHARED = process.env.PEERS_SHARED !== "0";
const SHARED_MAX = Number(process.env.PEERS_SHARED_MAX ?? 100_000);
const RESULTS = "peers.json";

const log = (msg) => process.stderr.write(`[peers ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const guard = phaseGuard({ log });

/** With PEERS_RESUME=1, what an earlier run with the same settings measured. */
function earlier(settings) {
  const file = path.join(ROOT, "bench/results", RESULTS);
  if (process.env.PEERS_RESUME !== "1" || !fs.existsSync(file)) return undefined;
  const old = JSON.parse(fs.readFileSync(file, "utf8"));
  return old.settings?.queries === settings.queries && old.settings?.concurrency === settings.concurrency ? old : undefined;
}

/** Fills `result` (of size `result.n`), calling `save()` after each system so that a size that fails keeps the rest. */
async function measureSize(result, sharedSupport, save) {
  const n = result.n;
  const { texts, queries } = workload(n, QUERIES);
  result.corpus = { entries: n, digest: digest(texts), mean_chars: Math.round(texts.reduce((s, t) => s + t.length, 0) / n), queries: queries.length, sample_queries: queries.slice(0, 3) };
  if (SYSTEMS.has("engram")) {
    log(`${n}: engram`);
    result.engram = await engramSize({ n, texts, queries, concurrency: CONCURRENCY, guard });
    save();
  }
  if (SYSTEMS.has("lancedb")) {
    log(`${n}: lancedb`);
    result.lancedb = await lancedbSize({ n, queries, digest: result.corpus.digest, concurrency: CONCURRENCY });
    save();
  }
  if (SHARED && n <= SHARED_MAX) {
    if (sharedSupport.unsupported) {
      result.shared_status = `not measured: the server does not take caller vectors yet (${sharedSupport.unsupported})`;
    } else {
      log(`${n}: shared vectors`);
      const embedder = await engramEmbedder();
      const vectors = { texts: await sharedVectors(embedder, texts), queries: await sharedVectors(embedder, queries) };
      result.shared = { dimensions: SHARED_DIMENSIONS };
      if (SYSTEMS.has("engram")) result.shared.engram = await engramSize({ n, texts, queries, vectors, concurrency: CONCURRENCY, guard, restart: false, label: "engram shared" });
      if (SYSTEMS.has("lancedb")) result.shared.lancedb = await lancedbSize({ n, queries, digest: result.corpus.digest, concurrency: CONCURRENCY, shared: true, restart: false });
    }
  }
  result.interference = [result.engram, result.lancedb, result.shared?.engram, result.shared?.lancedb]
    .flatMap((side) => [side?.ingest?.guard, side?.query_1?.guard, side?.query_concurrent?.guard])
    .filter(Boolean);
  guard.reset();
}

async function main() {
  const settings = { sizes: SIZES, queries: QUERIES, concurrency: CONCURRENCY, systems: [...SYSTEMS], shared_max: SHARED ? SHARED_MAX : 0, top_k: 10 };
  const old = earlier(settings);
  const results = {
    benchmark: "peers",
    machine: machine(),
    settings,
    lancedb: { package: "@lancedb/lancedb 0.37.1 (apache-arrow 18.1.0), in-process in a child process, no fsync" },
    recall: old?.recall,
    sizes: [],
  };
  const embedder = await engramEmbedder();
  results.embedder = embedder.name;
  const sharedSupport = {};
  if (SHARED && SIZES.some((n) => n <= SHARED_MAX) && SYSTEMS.has("engram")) {
    const [probe] = await sharedVectors(embedder, ["probe entry"]);
    sharedSupport.unsupported = await sharedVectorsUnsupported(probe);
    log(sharedSupport.unsupported ? `shared vectors: not supported by the server yet (${sharedSupport.unsupported})` : "shared vectors: supported");
  }
  if (!results.recall) {
    log("LoCoMo recall@10");
    results.recall = {};
    if (SYSTEMS.has("engram")) results.recall.engram = await engramRecall();
    if (SYSTEMS.has("lancedb")) results.recall.lancedb = await lancedbRecall();
    writeResults(RESULTS, results);
  }
  for (const n of SIZES) {
    const kept = old?.sizes.find((r) => r.n === n);
    if (kept) {
      results.sizes.push(kept);
      continue;
    }
    const result = { n };
    results.sizes.push(result);
    await measureSize(result, sharedSupport, () => writeResults(RESULTS, results));
    writeResults(RESULTS, results); // keep what was measured even if a later size fails
  }
  const file = writeResults(RESULTS, results);
  console.log(table(results));
  console.log(
    `\nEngram over HTTP (its embedder in the server); LanceDB in-process with Engram's embedder (${results.embedder}), embedding time counted in its ingest and queries.`,
  );
  for (const r of results.sizes) {
    const hit = (r.interference ?? []).filter(disturbed);
    console.log(`${r.n}: ${hit.length ? `WARNING: other processes used the CPUs during ${hit.map((p) => `${p.phase} (${Math.round(p.other_processes_cpu_share_mean * 100)} %)`).join(", ")}` : "every timed phase ran on a quiet machine"}`);
  }
  const missed = verdicts(results).filter(([, met]) => !met);
  for (const [label] of missed) console.log(`missed: ${label}`);
  console.log(`results: ${path.relative(ROOT, file)}`);
  return missed.length > 0 ? 3 : 0;
}

process.exitCode = await main();
