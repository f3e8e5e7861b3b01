// The Engram side: the built server as a child process over HTTP/JSON, measured with bench/'s own method (ingest 1000
// items a request until every job completed; POST /v2/control/query), on the same workload LanceDB gets.
import { ApiError, ingestAll, post, round } from "../lib/api.mjs";
import { httpClient } from "../lib/http-client.mjs";
import { loadLocomo, recallAt } from "../lib/locomo.mjs";
import { memoryMib } from "../lib/process-stats.mjs";
import { diskBytes, mintAdminKey, removeDir, startServer, tempDir, waitIdle } from "../lib/server.mjs";
import { querySeries } from "./series.mjs";
import { LOCOMO_FILE, SHARED_SPACE } from "./workload.mjs";

const RUN_ID = "peers";
const TOP_K = 10;
const INFLIGHT = Number(process.env.PEERS_INGEST_INFLIGHT ?? 1);

/** The request field pair that hands Engram a caller's own vector (ingest items and queries alike). */
const withVector = (body, vector) => (vector ? { ...body, embedding: Array.from(vector), vector_space: SHARED_SPACE } : body);

/**
 * Whether the server takes caller vectors (`embedding` + `vector_space`): ingests one item with a shared vector and
 * queries with it. Resolves with undefined when it does, else with the reason.
 */
export async function sharedVectorsUnsupported(vector) {
  const server = await startServer({ dataDir: tempDir("peers-probe"), key: mintAdminKey() });
  try {
    await ingestAll(server, "probe", [withVector({ text: "probe entry", entry_type: "fact" }, vector)], { inFlight: 1, timeoutMs: 30_000 });
    const res = await post(server, "/v2/control/query", withVector({ run_id: "probe", query: "probe entry", limit: 1 }, vector));
    if ((res.evidence ?? []).length !== 1) return `a query with the probe's own vector found ${(res.evidence ?? []).length} entries`;
    return undefined;
  } catch (e) {
    return e instanceof ApiError ? `${e.status}: ${e.body.slice(0, 200)}` : String(e?.message ?? e);
  } finally {
    await server.stop();
    removeDir(server.dataDir);
  }
}

/**
 * One size on Engram: a fresh server loaded with `texts` (with `vectors.texts` when given: the shared-vectors row),
 * query series with 1 and `concurrency` clients, memory added by the load, disk use and, unless `restart` is false,
 * start-up to ready on the data left.
 */
export async function engramSize({ n, texts, queries, vectors, concurrency, guard, restart = true, label = "engram" }) {
  const key = mintAdminKey();
  const items = texts.map((text, i) => withVector({ text, entry_type: "fact" }, vectors?.texts[i]));
  const out = {};
  let server;
  let dataDir;
  let rssBefore;
  try {
    // A fresh server and data dir per attempt, so that a disturbed load is redone from scratch.
    out.ingest = await guard.guarded(`${label} ${n} ingest`, async () => {
      if (server) await server.stop();
      if (dataDir) removeDir(dataDir);
      dataDir = tempDir(`peers-n${n}`);
      server = await startServer({ dataDir, key });
      await waitIdle(server.pid);
      rssBefore = memoryMib(server.pid).rss;
      const ingest = await ingestAll(server, RUN_ID, items, { inFlight: INFLIGHT, timeoutMs: 120_000 + n * 20 });
      return { items_per_s: round((n / ingest.totalMs) * 1000, 0), total_ms: round(ingest.totalMs), acknowledged_ms: round(ingest.submitMs), requests_in_flight: INFLIGHT };
    });
    out.ingest.guard = guard.records.at(-1);
    // Jobs completed means durable and searchable; let background indexing settle before measuring queries.
    // (At 1M the vector graph needs minutes to catch up with the load: the bound grows with the size.)
    out.ingest.background_settle_ms = round(await waitIdle(server.pid, { timeoutMs: Math.max(180_000, n) }));
    const rssLoaded = memoryMib(server.pid).rss;
    for (const clients of [1, concurrency]) {
      const client = httpClient(server, { sockets: clients });
      const ask = async (query, i) => (await client.post("/v2/control/query", withVector({ run_id: RUN_ID, query, limit: TOP_K }, vectors?.queries[i]))).evidence?.length ?? 0;
      try {
        out[clients === 1 ? "query_1" : "query_concurrent"] = { ...(await guard.guarded(`${label} ${n} query ${clients} clients`, () => querySeries(queries, clients, ask))), guard: guard.records.at(-1) };
      } finally {
        client.close();
      }
    }
    const rssAfter = memoryMib(server.pid).rss;
    out.memory = {
      rss_mib_before: round(rssBefore),
      rss_mib_loaded: round(rssLoaded),
      rss_mib_after_queries: round(rssAfter),
      peak_rss_mib: round(server.peakRss() / 2 ** 20),
      added_mib: round(rssLoaded - rssBefore),
      added_after_queries_mib: round(rssAfter - rssBefore),
    };
    await server.stop();
    out.disk_mib = round(diskBytes(dataDir) / 2 ** 20);
    if (restart) out.startup = await restartOn(dataDir, key, queries[0]);
    return out;
  } finally {
    if (server) await server.stop();
    if (dataDir) removeDir(dataDir);
  }
}

/** Start-up to ready on the data left: spawn until GET /readyz answers 200, then one query. */
async function restartOn(dataDir, key, query) {
  const server = await startServer({ dataDir, key, readyTimeoutMs: 900_000 });
  try {
    const rss = memoryMib(server.pid).rss;
    const t0 = performance.now();
    const res = await post(server, "/v2/control/query", { run_id: RUN_ID, query, limit: TOP_K });
    return { ready_ms: round(server.readyMs), rss_mib_at_ready: round(rss), first_query_ms: round(performance.now() - t0), first_query_results: (res.evidence ?? []).length };
  } finally {
    await server.stop();
  }
}

/**
 * LoCoMo recall@10 with bench/quality.mjs's method: each conversation in its own run (one item a turn, its dia id as
 * item_id and in metadata_json), each question of categories 1–4 asked against its conversation's run.
 */
export async function engramRecall() {
  const { conversations } = loadLocomo(LOCOMO_FILE);
  const server = await startServer({ dataDir: tempDir("peers-locomo"), key: mintAdminKey() });
  try {
    const scores = [];
    for (const conv of conversations) {
      const runId = `locomo-${conv.id}`;
      const items = conv.entries.map((e) => ({ item_id: e.diaId, text: e.content, entry_type: "fact", occurrence_time: e.occurrenceTime, metadata_json: JSON.stringify({ dia_id: e.diaId, session: e.session }) }));
      const { jobs } = await ingestAll(server, runId, items, { inFlight: 1, timeoutMs: 600_000 });
      const byEntryId = new Map();
      for (const job of jobs) for (const trace of job.traces ?? []) for (const write of trace.writes ?? []) if (write.record_id) byEntryId.set(write.record_id, trace.item_id);
      for (const q of conv.questions) {
        const res = await post(server, "/v2/control/query", { run_id: runId, query: q.text, limit: TOP_K });
        const ranked = (res.evidence ?? []).map((e) => byEntryId.get(e.id) ?? diaIdInMetadata(e.metadata_json));
        scores.push(recallAt(ranked, q.evidence, TOP_K));
      }
    }
    return { questions: scores.length, recall_at_10: round((100 * scores.reduce((a, b) => a + b, 0)) / scores.length, 1) };
  } finally {
    await server.stop();
    removeDir(server.dataDir);
  }
}

function diaIdInMetadata(json) {
  try {
    const meta = JSON.parse(json || "{}");
    return typeof meta.dia_id === "string" ? meta.dia_id : undefined;
  } catch {
    return undefined;
  }
}
