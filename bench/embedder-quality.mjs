// Measures the offline embedders' retrieval quality on LoCoMo (evidence recall@k) and their load time and speed.
//
// Usage: npx tsc -p tsconfig.build.json && node bench/embedder-quality.mjs [path/to/locomo_dev.json]
// In-process, no server: every turn of a conversation is an entry ("Speaker: text", plus " [image: caption]" when the
// turn shares an image), each question of categories 1–4 that has evidence is asked against its own conversation, and
// recall@k is the share of its evidence turns among the top k, averaged over questions. Evidence ids are normalised
// ("D8:6; D9:17" is two ids, "D30:05" is D30:5).
import fs from "node:fs";
import { cosine } from "../dist/src/retrieval/embedder.js";
import { HashedEmbedder } from "../dist/src/retrieval/embedders/hashed-embedder.js";
import { WordVectorEmbedder } from "../dist/src/retrieval/embedders/word-vector-embedder.js";
import { terms, words } from "../dist/src/retrieval/text.js";

const DATA = process.argv[2] ?? "/work/shared/data/locomo_dev.json";
const KS = [5, 10, 20];

function loadConversations(file) {
  const conversations = [];
  for (const sample of JSON.parse(fs.readFileSync(file, "utf8"))) {
    const entries = [];
    const c = sample.conversation;
    for (let s = 1; Array.isArray(c[`session_${s}`]); s++) {
      for (const turn of c[`session_${s}`]) {
        const caption = turn.blip_caption ? ` [image: ${turn.blip_caption}]` : "";
        entries.push({ id: turn.dia_id, content: `${turn.speaker}: ${turn.text}${caption}` });
      }
    }
    const questions = [];
    for (const qa of sample.qa) {
      if (qa.category < 1 || qa.category > 4) continue;
      const evidence = new Set();
      for (const raw of qa.evidence) {
        for (const part of String(raw).split(/[;,\s]+/)) {
          const m = /^D(\d+):(\d+)$/.exec(part.trim());
          if (m) evidence.add(`D${Number(m[1])}:${Number(m[2])}`);
        }
      }
      if (evidence.size > 0) questions.push({ text: qa.question, evidence: [...evidence] });
    }
    conversations.push({ entries, questions });
  }
  return conversations;
}

/** Okapi BM25 over pre-tokenized entries, with Lucene's non-negative idf. */
function bm25(entryTerms, k1, b) {
  const tfs = entryTerms.map((ts) => {
    const tf = new Map();
    for (const t of ts) tf.set(t, (tf.get(t) ?? 0) + 1);
    return tf;
  });
  const avg = entryTerms.reduce((sum, ts) => sum + ts.length, 0) / entryTerms.length;
  const df = new Map();
  for (const tf of tfs) for (const t of tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  return (queryTerms) => {
    const scores = new Float64Array(tfs.length);
    for (const t of new Set(queryTerms)) {
      const n = df.get(t);
      if (n === undefined) continue;
      const idf = Math.log(1 + (tfs.length - n + 0.5) / (n + 0.5));
      tfs.forEach((tf, i) => {
        const f = tf.get(t);
        if (f !== undefined) scores[i] += (idf * f * (k1 + 1)) / (f + k1 * (1 - b + (b * entryTerms[i].length) / avg));
      });
    }
    return scores;
  };
}

function minmax(scores) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of scores) [lo, hi] = [Math.min(lo, s), Math.max(hi, s)];
  return scores.map((s) => (hi > lo ? (s - lo) / (hi - lo) : 0));
}

async function cosineScorer(embedder, conversation) {
  const vectors = await embedder.embed(conversation.entries.map((e) => e.content));
  return async (question) => {
    const [q] = await embedder.embed([question]);
    return Float64Array.from(vectors, (v) => cosine(q, v));
  };
}

function bm25Scorer(conversation, tokenize, k1, b) {
  const score = bm25(conversation.entries.map((e) => tokenize(e.content)), k1, b);
  return async (question) => score(tokenize(question));
}

async function fusedScorer(embedder, conversation) {
  const lexical = bm25Scorer(conversation, terms, 0.9, 0.3);
  const dense = await cosineScorer(embedder, conversation);
  return async (question) => {
    const b = minmax(await lexical(question));
    const c = minmax(await dense(question));
    return b.map((x, i) => 0.6 * x + 0.4 * c[i]);
  };
}

async function recall(conversations, makeScorer) {
  const sums = KS.map(() => 0);
  let questions = 0;
  for (const conversation of conversations) {
    const score = await makeScorer(conversation);
    for (const q of conversation.questions) {
      const scores = await score(q.text);
      const order = [...scores.keys()].sort((a, b) => scores[b] - scores[a] || a - b);
      KS.forEach((k, i) => {
        const top = new Set(order.slice(0, k).map((j) => conversation.entries[j].id));
        sums[i] += q.evidence.filter((id) => top.has(id)).length / q.evidence.length;
      });
      questions++;
    }
  }
  return { questions, recall: sums.map((s) => ((100 * s) / questions).toFixed(1)) };
}

function throughput(embedder, texts) {
  for (const t of texts) embedder.embedOne(t);
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < 2000) {
    for (const t of texts) embedder.embedOne(t);
    n += texts.length;
  }
  return Math.round(n / ((performance.now() - started) / 1000));
}

const conversations = loadConversations(DATA);
const loadStarted = performance.now();
const wordVectors = await WordVectorEmbedder.load();
const loadMs = performance.now() - loadStarted;
const hashed = new HashedEmbedder();

const rows = [
  ["BM25, plain tokenizer with stopwords (k1 1.2, b 0.75)", (c) => bm25Scorer(c, words, 1.2, 0.75)],
  ["(c) BM25, stemmed, stopwords dropped (k1 0.9, b 0.3)", (c) => bm25Scorer(c, terms, 0.9, 0.3)],
  [`(a) hashed embedder alone (${hashed.id})`, (c) => cosineScorer(hashed, c)],
  [`(b) word-vector embedder alone (${wordVectors.id})`, (c) => cosineScorer(wordVectors, c)],
  ["0.6·minmax(BM25) + 0.4·minmax(cosine, hashed)", (c) => fusedScorer(hashed, c)],
  ["(d) 0.6·minmax(BM25) + 0.4·minmax(cosine, word vectors)", (c) => fusedScorer(wordVectors, c)],
];
console.log(`| configuration | ${KS.map((k) => `R@${k}`).join(" | ")} |`);
console.log(`|---|${KS.map(() => "---").join("|")}|`);
let questions = 0;
for (const [name, makeScorer] of rows) {
  const result = await recall(conversations, makeScorer);
  questions = result.questions;
  console.log(`| ${name} | ${result.recall.join(" | ")} |`);
}
const texts = conversations.flatMap((c) => [...c.entries.map((e) => e.content), ...c.questions.map((q) => q.text)]);
const meanChars = Math.round(texts.reduce((sum, t) => sum + t.length, 0) / texts.length);
const table = `${wordVectors.vocabularySize} words × ${wordVectors.dimensions}`;
console.log(`\n${questions} questions. Word vectors: ${table}, loaded in ${loadMs.toFixed(0)} ms.`);
console.log(`Embedding throughput, one core, ${texts.length} texts of ${meanChars} characters on average:`);
console.log(`  ${wordVectors.id}: ${throughput(wordVectors, texts)} texts/s; ${hashed.id}: ${throughput(hashed, texts)} texts/s`);
