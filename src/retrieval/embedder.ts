// The Embedder interface: turns texts into unit-length vectors of a fixed dimension for one named model.

export interface Embedder {
  /** Identifies the model; vectors of different ids never mix in one index. */
  readonly id: string;
  readonly dimensions: number;
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /**
   * Embeds one text at once, for embedders that run in-process (word vectors, hashing). Ranking uses it to compare
   * short situations by meaning inside a query; remote embedders leave it out and those comparisons are skipped.
   */
  embedOne?(text: string): Float32Array;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const x of vector) norm += x * x;
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) * scale;
  }
  return vector;
}
