// Adapter to the server's own compiled vector index, for measuring its recall against brute force in-process.
// Returns undefined when no such module is compiled; the caller then measures USearch directly and says so.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, removeDir, tempDir } from "./server.mjs";

const DIST = path.resolve(ROOT, path.dirname(process.env.BENCH_SERVER ?? "dist/src/serve.js"));
const MODULE = "retrieval/vector-index.js";

const silentLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, fatal() {}, child: () => silentLogger };

/**
 * { name, add(matrix, n), search(vector, k) → row indices, close() } over the server's VectorIndex, or undefined.
 * Rows are stored under seq = row + 1 (the server's entry seqs start at 1) and every query's candidate list is the
 * whole corpus, as for a query over one run holding every entry.
 */
export async function serverVectorIndex(dimensions) {
  const file = path.join(DIST, MODULE);
  if (!fs.existsSync(file)) return undefined;
  const mod = await import(pathToFileURL(file).href);
  if (typeof mod.VectorIndex !== "function") {
    process.stderr.write(`bench: ${path.relative(ROOT, file)} exports no VectorIndex (exports: ${Object.keys(mod).join(", ")})\n`);
    return undefined;
  }
  const dir = tempDir("vector-index");
  const index = new mod.VectorIndex(dir, "bench", dimensions, silentLogger);
  let candidates = [];
  const all = () => true;
  return {
    name: `server VectorIndex (${path.relative(ROOT, file)})`,
    async add(matrix, n) {
      for (let row = 0; row < n; row++) index.add(row + 1, matrix.subarray(row * dimensions, (row + 1) * dimensions));
      await index.indexPending();
      candidates = Array.from({ length: n }, (_, row) => row + 1);
    },
    search(vector, k) {
      // The index takes the scope as a list of ascending seq lists (one per run or lesson set); here one list.
      return index.search(vector, [candidates], all, k).map((hit) => hit.seq - 1);
    },
    /** Graph-only search (no scope filtering), to separate the graph's recall from the wrapper's. */
    graphSize: () => index.size,
    close() {
      index.close();
      removeDir(dir);
    },
  };
}
