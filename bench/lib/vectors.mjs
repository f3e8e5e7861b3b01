// In-process vector baselines: the server's embedder over the bench corpus, brute-force cosine top-k, and USearch.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "./server.mjs";

const DIST = path.resolve(ROOT, path.dirname(process.env.BENCH_SERVER ?? "dist/src/serve.js"));

async function importDist(relative) {
  const file = path.join(DIST, relative);
  if (!fs.existsSync(file)) return undefined;
  return import(pathToFileURL(file).href);
}

/** The embedder the server will use: SERVICE_EMBEDDER (passed on to it), else the compiled config's default. */
export function embedderName() {
  if (process.env.SERVICE_EMBEDDER) return process.env.SERVICE_EMBEDDER;
  const config = path.join(DIST, "platform/config.js");
  const source = fs.existsSync(config) ? fs.readFileSync(config, "utf8") : "";
  return /"SERVICE_EMBEDDER",\s*"(\w[\w-]*)"/.exec(source)?.[1] ?? "hashed";
}

/** The server's embedder (wordvec or hashed), loaded in-process from the compiled code. */
export async function loadEmbedder() {
  const kind = embedderName();
  if (kind === "wordvec" || kind === "word-vectors") {
    const mod = await importDist("retrieval/embedders/word-vector-embedder.js");
    if (!mod) throw new Error(`no compiled word-vector embedder under ${DIST}`);
    return { kind, embedder: await mod.WordVectorEmbedder.load(path.join(ROOT, mod.WORD_VECTORS_ASSET)) };
  }
  const mod = await importDist("retrieval/embedders/hashed-embedder.js");
  if (!mod) throw new Error(`no compiled embedder under ${DIST}`);
  return { kind: "hashed", embedder: new mod.HashedEmbedder() };
}

/** Embeds texts into one row-major Float32Array of unit vectors. */
export async function embedAll(embedder, texts, batch = 1000) {
  const d = embedder.dimensions;
  const out = new Float32Array(texts.length * d);
  for (let i = 0; i < texts.length; i += batch) {
    const vectors = await embedder.embed(texts.slice(i, i + batch));
    vectors.forEach((v, j) => {
      let norm = 0;
      for (let x = 0; x < d; x++) norm += v[x] * v[x];
      const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
      for (let x = 0; x < d; x++) out[(i + j) * d + x] = v[x] * scale;
    });
  }
  return out;
}

/** Exact top-k by cosine (dot product of unit vectors); ties by lower index. Returns row indices, best first. */
export function bruteForceTopK(matrix, n, d, query, k) {
  const topScores = new Float64Array(k).fill(-Infinity);
  const topIds = new Int32Array(k).fill(-1);
  for (let row = 0; row < n; row++) {
    let dot = 0;
    const base = row * d;
    for (let x = 0; x < d; x++) dot += matrix[base + x] * query[x];
    if (dot <= topScores[k - 1]) continue;
    let pos = k - 1;
    while (pos > 0 && topScores[pos - 1] < dot) {
      topScores[pos] = topScores[pos - 1];
      topIds[pos] = topIds[pos - 1];
      pos--;
    }
    topScores[pos] = dot;
    topIds[pos] = row;
  }
  return Array.from(topIds).filter((id) => id >= 0);
}

async function usearchModule() {
  const usearch = await import("usearch");
  return usearch.default ?? usearch;
}

/** Native exact search (USearch's SIMD brute force, one thread): the raw-library latency baseline. */
export async function nativeExactSearch(matrix, n, d) {
  const { exactSearch } = await usearchModule();
  return (query, k) => Array.from(exactSearch(matrix.subarray(0, n * d), query, d, k, "cos", 1).keys, Number);
}

/** Builds a USearch HNSW index (cos, f16, library defaults: connectivity 16, expansion 128 add / 64 search). */
export async function buildUsearch(matrix, n, d, threads = 2) {
  const { Index } = await usearchModule();
  const config = { dimensions: d, metric: "cos", quantization: "f16", connectivity: 0, expansion_add: 0, expansion_search: 0 };
  const index = new Index(config);
  const keys = new BigUint64Array(n);
  for (let i = 0; i < n; i++) keys[i] = BigInt(i);
  const started = performance.now();
  index.add(keys, matrix.subarray(0, n * d), threads);
  const buildMs = performance.now() - started;
  /** The same graph searched with a wider beam: saved once, loaded into an index configured with `expansion`. */
  const withExpansion = (file, expansion) => {
    if (!fs.existsSync(file)) index.save(file);
    const other = new Index({ ...config, expansion_search: expansion });
    other.load(file);
    return other;
  };
  return { index, buildMs, withExpansion };
}

/** recall@k of approximate results against exact ones: shared ids / k, averaged over queries. */
export function recallAgainst(exact, approximate, k) {
  let sum = 0;
  exact.forEach((truth, q) => {
    const got = new Set(approximate[q].slice(0, k));
    sum += truth.slice(0, k).filter((id) => got.has(id)).length / Math.max(1, Math.min(k, truth.length));
  });
  return sum / exact.length;
}
