// The engine's own indexes, opened in the bench's process on a fresh temporary store with the embedded word-vector
// embedder: what the in-process tuning benches (tune-retrieval, tune-known-item) index into and search, with ranking
// knobs varied through `searchEngine(tuning)`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./server.mjs";

const dist = (p) => import(path.join(ROOT, "dist/src", p));
const { openStorage } = await dist("storage/database.js");
const { EntryStore } = await dist("storage/entry-store.js");
const { WordVectorEmbedder } = await dist("retrieval/embedders/word-vector-embedder.js");
const { MemoryIndex } = await dist("memory/memory-index.js");
const { SearchEngine, DEFAULT_TUNING } = await dist("retrieval/search-engine.js");
const { createLogger } = await dist("platform/logger.js");
const { newEntry } = await dist("storage/entry-record.js");

export { DEFAULT_TUNING };

/** Opens the indexes; `write(entries)` stores and indexes plain entries of owner 1 and resolves with their seqs. */
export async function openEngine(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `engram-${name}-`));
  const storage = openStorage(dir);
  const entries = new EntryStore(storage);
  const embedder = await WordVectorEmbedder.load();
  const index = new MemoryIndex(storage, entries, embedder, createLogger("silent"));
  return {
    embedder,
    /** `fields`: runId, entryType, content, occurrenceTime of each entry. */
    async write(fieldsList) {
      const prepared = await index.prepare(fieldsList.map((fields) => ({ entry: newEntry({ owner: 1, ...fields }) })));
      const written = await entries.append(prepared);
      index.indexWritten(written, prepared);
      return written.map(({ record }) => record.seq);
    },
    searchEngine: (tuning) => new SearchEngine(entries, index.catalog, index.sparse, index.dense, index.situations, index.lessonSituations, tuning),
    async close() {
      index.close();
      await storage.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
