// The LanceDB side, run in a child process of run.mjs (so its memory is its own and it shares no event loop with the
// Engram clients): embedded LanceDB with hybrid search as its documentation shows it (an FTS index on the text, a
// vector column, RRF over both), driven by commands over IPC. Phases that are timed run behind the quiet-machine guard
// here, in the process doing the work, so that the guard counts LanceDB's own threads as the bench's.
import * as lancedb from "@lancedb/lancedb";
import { Index, rerankers } from "@lancedb/lancedb";
import { Field, FixedSizeList, Float32, Int32, Schema, Utf8 } from "apache-arrow";
import { loadLocomo, recallAt } from "../lib/locomo.mjs";
import { phaseGuard } from "../lib/guard.mjs";
import { round } from "../lib/api.mjs";
import { querySeries } from "./series.mjs";
import { LOCOMO_FILE, SHARED_DIMENSIONS, digest, engramEmbedder, sharedVectors, workload } from "./workload.mjs";

const TABLE = "entries";
const BATCH = 1000;
const TOP_K = 10;
/** From this many rows on, the table gets a vector index (IVF_PQ); below it LanceDB searches vectors exactly. */
const VECTOR_INDEX_FROM = Number(process.env.PEERS_LANCE_VECTOR_INDEX_FROM ?? 500_000);

const log = (msg) => process.stderr.write(`[lancedb ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const guard = phaseGuard({ log });
const gc = () => globalThis.gc?.();

function schemaOf(dimensions, extra = []) {
  return new Schema([
    new Field("id", new Int32()),
    ...extra,
    new Field("text", new Utf8()),
    new Field("vector", new FixedSizeList(dimensions, new Field("item", new Float32(), true))),
  ]);
}

/**
 * IVF_PQ sub-vectors of 16 (or else 4) dimensions: left to itself LanceDB gave Engram's 100-d vectors 1 sub-vector,
 * one byte a vector (recall near nothing).
 */
const subVectors = (dimensions) => (dimensions % 16 === 0 ? dimensions / 16 : dimensions / 4);

let state;

/** Loads the workload and the embedder, opens an empty table: everything that is there before the load starts. */
async function setup({ n, queries, dir, shared }) {
  const work = workload(n, queries);
  const embedder = await engramEmbedder();
  // Shared vectors are computed before any timing, like the caller's precomputed vectors they stand for.
  const pre = shared ? { texts: await sharedVectors(embedder, work.texts), queries: await sharedVectors(embedder, work.queries) } : undefined;
  const db = await lancedb.connect(dir);
  const dimensions = shared ? SHARED_DIMENSIONS : embedder.dimensions;
  const table = await db.createEmptyTable(TABLE, schemaOf(dimensions), { mode: "overwrite" });
  const label = `lancedb${shared ? " shared" : ""} ${n}`;
  state = { n, label, work, embedder, pre, db, table, dimensions, reranker: await rerankers.RRFReranker.create() };
  gc();
  return { digest: digest(work.texts), embedder: embedder.name, dimensions, vectors: shared ? "shared (precomputed)" : "Engram's embedder, computed in the timed ingest and query" };
}

/** Adds everything 1000 rows a call, then compacts and indexes: what it takes until every row is searchable. */
async function ingest() {
  const { work, embedder, pre, dimensions } = state;
  const value = await guard.guarded(`${state.label} ingest`, async (attempt) => {
    if (attempt > 1) state.table = await state.db.createEmptyTable(TABLE, schemaOf(dimensions), { mode: "overwrite" });
    const table = state.table;
    gc();
    // Read per attempt: a repeated attempt starts from what the last one left in memory.
    const rssBefore = process.memoryUsage.rss() / 2 ** 20;
    const started = performance.now();
    let embedMs = 0;
    for (let i = 0; i < work.texts.length; i += BATCH) {
      const texts = work.texts.slice(i, i + BATCH);
      const t0 = performance.now();
      const vectors = pre ? pre.texts.slice(i, i + BATCH) : await embedder.vectors(texts);
      embedMs += performance.now() - t0;
      await table.add(texts.map((text, j) => ({ id: i + j, text, vector: Array.from(vectors[j]) })));
    }
    const addedMs = performance.now() - started;
    // Compacts the 1000-row fragments and drops the versions they left (the table has no other writer), as the
    // documentation advises after many small appends; otherwise every query visits N / 1000 fragments.
    await table.optimize({ cleanupOlderThan: new Date(), deleteUnverified: true });
    const optimizedMs = performance.now() - started;
    await table.createIndex("text", { config: Index.fts() });
    const ftsMs = performance.now() - started;
    const vectorIndexed = work.texts.length >= VECTOR_INDEX_FROM;
    if (vectorIndexed) await table.createIndex("vector", { config: Index.ivfPq({ distanceType: "l2", numSubVectors: subVectors(dimensions) }) });
    const totalMs = performance.now() - started;
    return {
      items_per_s: round((work.texts.length / totalMs) * 1000, 0),
      total_ms: round(totalMs),
      embed_ms: round(embedMs),
      add_ms: round(addedMs),
      optimize_ms: round(optimizedMs - addedMs),
      fts_index_ms: round(ftsMs - optimizedMs),
      vector_index_ms: vectorIndexed ? round(totalMs - ftsMs) : null,
      vector_index: vectorIndexed ? `IVF_PQ (L2, ${subVectors(dimensions)} sub-vectors), default nprobes` : "none (exact vector search)",
      rows: await table.countRows(),
      rss_mib_before: round(rssBefore),
    };
  });
  return { ...value, guard: guard.records.at(-1) };
}

/** One hybrid query as LanceDB's documentation writes it: FTS and vector candidates fused by RRF, top 10. */
async function hybrid(table, reranker, text, vector, columns = ["id"]) {
  return table.query().fullTextSearch(text).nearestTo(vector).rerank(reranker).select(columns).limit(TOP_K).toArray();
}

async function query({ clients }) {
  const { work, embedder, pre, table, reranker } = state;
  const ask = async (text, i) => {
    const vector = pre ? pre.queries[i] : (await embedder.vectors([text]))[0];
    return (await hybrid(table, reranker, text, vector)).length;
  };
  const value = await guard.guarded(`${state.label} query ${clients} clients`, () => querySeries(work.queries, clients, ask));
  return { ...value, guard: guard.records.at(-1) };
}

/** A fresh process's first answer on the data left behind: open the table and answer one hybrid query. */
async function open({ dir, text }) {
  const started = performance.now();
  const embedder = await engramEmbedder();
  const db = await lancedb.connect(dir);
  const table = await db.openTable(TABLE);
  const rows = await hybrid(table, await rerankers.RRFReranker.create(), text, (await embedder.vectors([text]))[0]);
  return { in_process_ms: round(performance.now() - started), first_query_results: rows.length };
}

/** LoCoMo recall@10: each conversation in its own table, its questions asked as hybrid queries. */
async function recall({ dir }) {
  const { conversations } = loadLocomo(LOCOMO_FILE);
  const embedder = await engramEmbedder();
  const db = await lancedb.connect(dir);
  const reranker = await rerankers.RRFReranker.create();
  const scores = [];
  let failed = 0;
  let lastError;
  for (const conv of conversations) {
    const vectors = await embedder.vectors(conv.entries.map((e) => e.content));
    const rows = conv.entries.map((e, i) => ({ id: i, dia_id: e.diaId, text: e.content, vector: Array.from(vectors[i]) }));
    const table = await db.createTable(`conv_${conv.id}`.replace(/[^\w]/g, "_"), rows, { mode: "overwrite", schema: schemaOf(embedder.dimensions, [new Field("dia_id", new Utf8())]) });
    await table.createIndex("text", { config: Index.fts() });
    for (const q of conv.questions) {
      try {
        const hits = await hybrid(table, reranker, q.text, (await embedder.vectors([q.text]))[0], ["dia_id"]);
        scores.push(recallAt(hits.map((h) => h.dia_id), q.evidence, TOP_K));
      } catch (e) {
        failed++;
        lastError = e;
        scores.push(0);
      }
    }
  }
  return { questions: scores.length, recall_at_10: round((100 * scores.reduce((a, b) => a + b, 0)) / scores.length, 1), failed_queries: failed, last_error: lastError?.message };
}

const COMMANDS = { setup, ingest, query, open, recall };

process.on("message", async ({ id, command, args }) => {
  try {
    const fn = COMMANDS[command];
    if (!fn) throw new Error(`unknown command ${command}`);
    process.send({ id, ok: true, value: await fn(args ?? {}) });
  } catch (e) {
    process.send({ id, ok: false, error: String(e?.stack ?? e) });
  }
});
process.on("disconnect", () => process.exit(0));
process.send({ ready: true });
