// A synthetic but realistic memory corpus: "Name: sentence" entries over a few thousand English words drawn with
// Zipfian frequencies, with names and numbers, and queries drawn from the same vocabulary. Seeded: same N, same text.
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "./server.mjs";

const VOCABULARY_SIZE = 5000;
const WORD_ASSET = path.join(ROOT, "assets/word-vectors/sg100d-100k.bin");

export const NAMES = (
  "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil Trent Victor Walter " +
  "Caroline Melanie Gina Jon Priya Tomasz Aiko Mateo Fatima Lars Chen Amara Diego Sofia Kwame Ingrid Ravi Yuki Omar " +
  "Elena Hugo Noor Pablo Freya Idris Leila Marco Nadia Oscar Quinn Rosa Samir Tara Umar Vera Wen Ximena Yusuf Zara"
).split(" ");

/** mulberry32: a small, fast, seedable PRNG. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The most frequent English words, most frequent first: from the project's word-vector asset (GloVe order, see
 * scripts/derive-word-vectors.mjs) when present, else from the LoCoMo data's own word counts.
 */
export function vocabulary(locomoFile) {
  let words = [];
  if (fs.existsSync(WORD_ASSET)) {
    const bytes = fs.readFileSync(WORD_ASSET);
    const rows = bytes.readUInt32LE(8);
    const dims = bytes.readUInt32LE(12);
    const listBytes = bytes.readUInt32LE(20);
    const start = 24 + 4 * dims + 4 * rows + rows * dims;
    words = bytes.toString("utf8", start, start + listBytes).split("\n");
  } else if (locomoFile && fs.existsSync(locomoFile)) {
    const counts = new Map();
    for (const m of fs.readFileSync(locomoFile, "utf8").toLowerCase().matchAll(/"text": "([^"]*)"/g)) {
      for (const w of m[1].match(/[a-z]+/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
    }
    words = [...counts].sort((a, b) => b[1] - a[1]).map(([w]) => w);
  }
  words = words.filter((w) => /^[a-z]+$/.test(w) && (w.length > 1 || w === "a" || w === "i"));
  if (words.length < 500) throw new Error("no vocabulary source found (word-vector asset or LoCoMo data)");
  return words.slice(0, VOCABULARY_SIZE);
}

/** Samples ranks 0..n-1 with Zipf–Mandelbrot weights 1 / (rank + 2.7), like word frequencies in running text. */
function zipfSampler(n, random) {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let r = 0; r < n; r++) cdf[r] = total += 1 / (r + 2.7);
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function number(random) {
  const kind = Math.floor(random() * 4);
  if (kind === 0) return String(1990 + Math.floor(random() * 36));
  if (kind === 1) return String(2 + Math.floor(random() * 98));
  if (kind === 2) return `$${5 + Math.floor(random() * 995)}`;
  return `${1 + Math.floor(random() * 12)}:${String(Math.floor(random() * 60)).padStart(2, "0")}`;
}

export class Corpus {
  constructor(words, seed = 42) {
    this.words = words;
    this.random = rng(seed);
    this.zipf = zipfSampler(words.length, this.random);
  }

  pick(list) {
    return list[Math.floor(this.random() * list.length)];
  }

  sentence() {
    const length = 6 + Math.floor(this.random() * 22);
    const out = [];
    for (let i = 0; i < length; i++) {
      const x = this.random();
      if (x < 0.05) out.push(this.pick(NAMES));
      else if (x < 0.09) out.push(number(this.random));
      else out.push(this.words[this.zipf()]);
    }
    out[0] = out[0][0].toUpperCase() + out[0].slice(1);
    return `${out.join(" ")}.`;
  }

  /** One memory entry: "Speaker: one or two sentences". */
  entry() {
    const text = this.random() < 0.3 ? `${this.sentence()} ${this.sentence()}` : this.sentence();
    return `${this.pick(NAMES)}: ${text}`;
  }

  entries(n) {
    return Array.from({ length: n }, () => this.entry());
  }

  /**
   * Queries: 60 % take 2–4 rarer words (rank ≥ 100) of a random entry, sometimes with its speaker; 40 % are 3–5
   * Zipf-drawn words of rank ≥ 50, which may match nothing well.
   */
  queries(entries, n) {
    const rank = new Map(this.words.map((w, i) => [w, i]));
    const out = [];
    while (out.length < n) {
      if (this.random() < 0.6) {
        const entry = this.pick(entries);
        const [speaker, text] = entry.split(": ", 2);
        const rare = [...new Set((text.toLowerCase().match(/[a-z]+/g) ?? []).filter((w) => (rank.get(w) ?? 0) >= 100))];
        if (rare.length < 2) continue;
        const k = Math.min(rare.length, 2 + Math.floor(this.random() * 3));
        const chosen = [];
        while (chosen.length < k) chosen.push(...rare.splice(Math.floor(this.random() * rare.length), 1));
        out.push(`${this.random() < 0.3 ? `${speaker} ` : ""}${chosen.join(" ")}`);
      } else {
        const k = 3 + Math.floor(this.random() * 3);
        const chosen = [];
        while (chosen.length < k) {
          const r = this.zipf();
          if (r >= 50 && !chosen.includes(this.words[r])) chosen.push(this.words[r]);
        }
        out.push(`what about ${chosen.join(" ")}`);
      }
    }
    return out;
  }
}
