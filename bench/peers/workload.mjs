// The side-by-side workload, rebuilt identically in each process that needs it: the seeded corpus and queries of a
// size, Engram's own embedder (loaded in-process from the build), and the deterministic "shared" vectors.
import path from "node:path";
import { createHash } from "node:crypto";
import { Corpus, rng, vocabulary } from "../lib/corpus.mjs";
import { ROOT } from "../lib/server.mjs";
import { loadEmbedder } from "../lib/vectors.mjs";

export const LOCOMO_FILE = path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json");
export const CORPUS_SEED = 42;
/** Dimensions of the shared vectors, and the name of their vector space on Engram's side. */
export const SHARED_DIMENSIONS = 384;
export const SHARED_SPACE = "bench384";
const PROJECTION_SEED = 384_001;

/** N entries and `queries` queries, the same texts in every process (run.mjs's corpus, seed 42). */
export function workload(n, queries) {
  const corpus = new Corpus(vocabulary(LOCOMO_FILE), CORPUS_SEED);
  const texts = corpus.entries(n);
  return { texts, queries: corpus.queries(texts, queries) };
}

/** A short digest of a list of texts, so that the two processes can show they worked on the same corpus. */
export function digest(texts) {
  const hash = createHash("sha256");
  for (const t of texts) hash.update(t).update("\n");
  return hash.digest("hex").slice(0, 16);
}

/** Scales a vector to unit length in place (the zero vector of an all-stopword text stays zero). */
function normalise(v) {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i] * v[i];
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < v.length; i++) v[i] *= scale;
  return v;
}

/**
 * Engram's embedder (what the server computes for itself), with `vectors(texts)` giving unit Float32Arrays: unit
 * length so that LanceDB's default L2 distance ranks as cosine does.
 */
export async function engramEmbedder() {
  const { kind, embedder } = await loadEmbedder();
  return {
    name: `${embedder.id} (${kind}, ${embedder.dimensions}-d)`,
    dimensions: embedder.dimensions,
    vectors: async (texts) => (await embedder.embed(texts)).map((v) => normalise(Float32Array.from(v))),
  };
}

/**
 * The "shared vectors": a seeded Gaussian random projection of Engram's embedder output to SHARED_DIMENSIONS,
 * normalised. Deterministic, so both systems are given exactly the same numbers, computed before any timing starts.
 */
export function sharedProjection(fromDimensions) {
  const random = rng(PROJECTION_SEED);
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const matrix = Float32Array.from({ length: fromDimensions * SHARED_DIMENSIONS }, gaussian);
  return (vector) => {
    const out = new Float32Array(SHARED_DIMENSIONS);
    for (let i = 0; i < fromDimensions; i++) {
      const x = vector[i];
      if (x === 0) continue;
      const row = i * SHARED_DIMENSIONS;
      for (let j = 0; j < SHARED_DIMENSIONS; j++) out[j] += x * matrix[row + j];
    }
    return normalise(out);
  };
}

/** The shared vectors of `texts`, computed in batches of 1000. */
export async function sharedVectors(embedder, texts) {
  const project = sharedProjection(embedder.dimensions);
  const out = [];
  for (let i = 0; i < texts.length; i += 1000) for (const v of await embedder.vectors(texts.slice(i, i + 1000))) out.push(project(v));
  return out;
}
