// The offline default: static GloVe word vectors, SIF-weighted and averaged per text, common component removed.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { eng as englishStopwords } from "stopword";
import type { Embedder } from "../embedder.js";
import { fnv1a } from "../hash.js";
import { stem } from "../text.js";

/** Where the asset lives relative to the project root; scripts/derive-word-vectors.mjs documents its format. */
export const WORD_VECTORS_ASSET = "assets/word-vectors/sg100d-100k.bin";

const MAGIC = "EGWV";
const FORMAT_VERSION = 1;
const HEADER_BYTES = 24;
/** SIF's smoothing constant: a word of prior probability p weighs a / (a + p). */
const SIF_A = 1e-3;
/**
 * Weight of a capitalised word inside a sentence, or of a line's "Name:" label. Names' GloVe vectors carry news
 * associations rather than meaning, and an entry's speaker or subject would otherwise dominate every vector it is in;
 * exact name matching is the lexical index's job. On LoCoMo, vector-only R@5/10/20: 40/50/62 against 33/44/55 at 1.
 */
const PROPER_NOUN_WEIGHT = 0.3;
const STOPWORDS = new Set(englishStopwords);
const TOKEN = /[\p{L}\p{N}]+/gu;
/** Characters that may sit between a sentence's end and its first word. */
const OPENERS = new Set([" ", "\t", "\r", '"', "'", "(", "[", "“", "‘", "*", "-"]);


/**
 * Whether a token reads as a name: capitalised, and either inside a sentence or labelling a line ("Mel: …").
 * Acronyms ("API", "LGBTQ") are topics more often than names, so they keep their full weight.
 */
function isProperNoun(text: string, start: number, token: string): boolean {
  const first = token.charAt(0);
  if (first === first.toLowerCase() || (token.length > 1 && token === token.toUpperCase())) return false;
  let i = start - 1;
  while (i >= 0 && OPENERS.has(text.charAt(i))) i--;
  const before = i < 0 ? "\n" : text.charAt(i);
  if (before !== "\n" && before !== "." && before !== "!" && before !== "?") return true;
  return text.charAt(start + token.length) === ":";
}

/** Finds the asset above this module: src/retrieval/embedders when run from source, dist/src/… when compiled. */
function defaultAssetPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, WORD_VECTORS_ASSET);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`word vectors not found: no ${WORD_VECTORS_ASSET} above ${here}`);
  }
}

export class WordVectorEmbedder implements Embedder {
  /** Bump the version whenever the asset or the weighting changes: stored vectors must never mix across them. */
  readonly id = "wordvec-sg100d-v1";
  readonly dimensions: number;
  /** Number of words with a stored vector. */
  readonly vocabularySize: number;
  readonly #rows: Int8Array;
  /** Per row: dequantisation scale × SIF weight, so a word costs one multiply-add per dimension. */
  readonly #rowWeights: Float32Array;
  readonly #component: Float64Array;
  readonly #index: Map<string, number>;
  /** Out-of-vocabulary words get trigram vectors of this length: the mean length of a stored vector. */
  readonly #oovNorm: number;
  /** SIF weight of a word rarer than every stored one. */
  readonly #oovWeight: number;
  readonly #sum: Float64Array;

  private constructor(
    rows: Int8Array,
    rowWeights: Float32Array,
    component: Float64Array,
    words: string[],
    oovNorm: number,
    oovWeight: number,
  ) {
    this.dimensions = component.length;
    this.vocabularySize = words.length;
    this.#rows = rows;
    this.#rowWeights = rowWeights;
    this.#component = component;
    this.#oovNorm = oovNorm;
    this.#oovWeight = oovWeight;
    this.#index = new Map();
    words.forEach((word, row) => {
      if (!this.#index.has(word)) this.#index.set(word, row);
    });
    this.#sum = new Float64Array(this.dimensions);
  }

  /** Loads the asset once at start-up (~50 ms, ~20 MB of memory); `file` defaults to the committed asset. */
  static async load(file: string = defaultAssetPath()): Promise<WordVectorEmbedder> {
    return WordVectorEmbedder.parse(await readFile(file));
  }

  /** Builds an embedder from the bytes of an asset; throws on a malformed one. The int8 rows are used in place. */
  static parse(bytes: Uint8Array): WordVectorEmbedder {
    const fail = (why: string): never => {
      throw new Error(`invalid word-vector asset: ${why}`);
    };
    if (bytes.length < HEADER_BYTES) fail("shorter than its header");
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (String.fromCharCode(...bytes.subarray(0, 4)) !== MAGIC) fail("bad magic");
    const version = view.getUint32(4, true);
    if (version !== FORMAT_VERSION) fail(`format version ${version}, expected ${FORMAT_VERSION}`);
    const rowCount = view.getUint32(8, true);
    const dims = view.getUint32(12, true);
    const sourceVocabulary = view.getUint32(16, true);
    const wordBytes = view.getUint32(20, true);
    if (rowCount === 0 || dims === 0 || sourceVocabulary < rowCount) fail("bad counts");
    const scalesAt = HEADER_BYTES + dims * 4;
    const rowsAt = scalesAt + rowCount * 4;
    const wordsAt = rowsAt + rowCount * dims;
    if (bytes.length !== wordsAt + wordBytes) fail(`${bytes.length} bytes, expected ${wordsAt + wordBytes}`);

    const component = new Float64Array(dims);
    for (let d = 0; d < dims; d++) component[d] = view.getFloat32(HEADER_BYTES + d * 4, true);
    const rows = new Int8Array(bytes.buffer, bytes.byteOffset + rowsAt, rowCount * dims);
    const words = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(wordsAt)).split("\n");
    if (words.pop() !== "" || words.length !== rowCount) fail("word list does not match the row count");

    // Zipf prior from the row index (rows are in frequency order): p = 1 / (rank · H_V), H_V ≈ ln V + γ.
    const harmonic = Math.log(sourceVocabulary) + 0.5772156649 + 1 / (2 * sourceVocabulary);
    const sif = (rank: number): number => SIF_A / (SIF_A + 1 / (rank * harmonic));
    const rowWeights = new Float32Array(rowCount);
    let normSum = 0;
    for (let row = 0; row < rowCount; row++) {
      const scale = view.getFloat32(scalesAt + row * 4, true);
      rowWeights[row] = scale * sif(row + 1);
      let squares = 0;
      for (let i = row * dims, end = i + dims; i < end; i++) squares += (rows[i] as number) * (rows[i] as number);
      normSum += scale * Math.sqrt(squares);
    }
    return new WordVectorEmbedder(rows, rowWeights, component, words, normSum / rowCount, sif(rowCount + 1));
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  /** Embeds one text synchronously; an empty or all-stopword text gives the zero vector. */
  embedOne(text: string): Float32Array {
    const sum = this.#sum.fill(0);
    // `match` and `indexOf` rather than `matchAll`: a match object per token was most of a bulk ingest's embedding
    // garbage. The next token starts at the first occurrence of its text after the previous one, as only
    // non-token characters lie between them.
    let at = 0;
    for (const token of text.match(TOKEN) ?? []) {
      const start = text.indexOf(token, at);
      at = start + token.length;
      const word = token.toLowerCase();
      if (STOPWORDS.has(word)) continue;
      const weight = isProperNoun(text, start, token) ? PROPER_NOUN_WEIGHT : 1;
      // The surface form first; its Porter stem only when that is missing ("refreshes" → "refresh").
      const row = this.#index.get(word) ?? this.#index.get(stem(word));
      if (row !== undefined) this.#addRow(sum, row, weight);
      else if (word.length > 1) this.#addTrigrams(sum, word, weight);
    }
    return this.#finish(sum);
  }

  #addRow(sum: Float64Array, row: number, weight: number): void {
    const w = weight * (this.#rowWeights[row] as number);
    const rows = this.#rows;
    const dims = this.dimensions;
    for (let d = 0, i = row * dims; d < dims; d++, i++) sum[d] = (sum[d] as number) + w * (rows[i] as number);
  }

  /**
   * An unknown word (a name, an identifier, a typo) still carries signal: the sum of pseudo-random ±1 vectors of its
   * character trigrams, so words that share spelling share direction. Single letters (the "s" of "'s") are skipped.
   */
  #addTrigrams(sum: Float64Array, word: string, weight: number): void {
    const padded = `^${word}$`;
    const trigrams = padded.length - 2;
    const dims = this.dimensions;
    // The sum of n independent ±1 vectors has an expected length of sqrt(n · dims).
    const w = (weight * this.#oovWeight * this.#oovNorm) / Math.sqrt(trigrams * dims);
    for (let j = 0; j < trigrams; j++) {
      let state = fnv1a(padded.slice(j, j + 3)) || 0x9e3779b9;
      for (let d = 0; d < dims; d++) {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        sum[d] = (sum[d] as number) + (state & 1 ? w : -w);
      }
    }
  }

  /** Removes the common component and scales to unit length. */
  #finish(sum: Float64Array): Float32Array {
    const dims = this.dimensions;
    const component = this.#component;
    let projection = 0;
    for (let d = 0; d < dims; d++) projection += (sum[d] as number) * (component[d] as number);
    let norm = 0;
    for (let d = 0; d < dims; d++) {
      const value = (sum[d] as number) - projection * (component[d] as number);
      sum[d] = value;
      norm += value * value;
    }
    const out = new Float32Array(dims);
    if (norm === 0) return out;
    const scale = 1 / Math.sqrt(norm);
    for (let d = 0; d < dims; d++) out[d] = (sum[d] as number) * scale;
    return out;
  }
}
