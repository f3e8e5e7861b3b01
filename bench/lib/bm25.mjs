// The in-process BM25 baseline: a plain tokenizer (lowercase letter/digit runs), English stopwords, Okapi BM25.
// Self-contained on purpose, so the baseline does not move when the engine's own text code changes.

const WORD = /[\p{L}\p{N}]+/gu;
/**
 * NLTK's English stopword list (179 words), the common "English stopwords". It includes the fragments the tokenizer
 * makes of contractions ("s", "m", "t", "ll", "ve"…). On locomo_dev it reproduces the data README's reference figures
 * within noise (R@5/10/20 50.3/56.9/63.5 against 51.3/57.3/63.4); the npm `stopword` package's 108-word list gives
 * 48.3/55.8/62.2, and no stopword removal 45.1/52.9/60.6.
 */
const STOPWORDS = new Set(
  (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him his " +
    "himself she she's her hers herself it it's its itself they them their theirs themselves what which who whom this " +
    "that that'll these those am is are was were be been being have has had having do does did doing a an the and but " +
    "if or because as until while of at by for with about against between into through during before after above below " +
    "to from up down in out on off over under again further then once here there when where why how all any both each " +
    "few more most other some such no nor not only own same so than too very s t can will just don don't should " +
    "should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't " +
    "haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't " +
    "weren weren't won won't wouldn wouldn't"
  ).split(" "),
);

/** Lowercase words, stopwords removed ("plain tokenizer with English stopwords"). */
export function plainTerms(text) {
  return (text.toLowerCase().match(WORD) ?? []).filter((w) => !STOPWORDS.has(w));
}

/** Lowercase words, nothing removed. */
export function plainWords(text) {
  return text.toLowerCase().match(WORD) ?? [];
}

/**
 * Okapi BM25 with Lucene's non-negative idf, log(1 + (N − n + 0.5) / (n + 0.5)), over an inverted index.
 * `search(query, k)` returns the indices of the best k documents, ties broken by document order.
 */
export class Bm25 {
  constructor(texts, { tokenize = plainTerms, k1 = 1.2, b = 0.75 } = {}) {
    this.tokenize = tokenize;
    this.k1 = k1;
    this.b = b;
    this.n = texts.length;
    this.lengths = new Float64Array(texts.length);
    this.postings = new Map(); // term → [docIndex, tf, docIndex, tf, …]
    let total = 0;
    texts.forEach((text, doc) => {
      const tf = new Map();
      const tokens = tokenize(text);
      for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      this.lengths[doc] = tokens.length;
      total += tokens.length;
      for (const [t, f] of tf) {
        let list = this.postings.get(t);
        if (!list) this.postings.set(t, (list = []));
        list.push(doc, f);
      }
    });
    this.avgLength = total / Math.max(1, texts.length);
  }

  scores(query) {
    const scores = new Float64Array(this.n);
    const { k1, b, avgLength, lengths } = this;
    for (const t of new Set(this.tokenize(query))) {
      const list = this.postings.get(t);
      if (!list) continue;
      const df = list.length / 2;
      const idf = Math.log(1 + (this.n - df + 0.5) / (df + 0.5));
      for (let i = 0; i < list.length; i += 2) {
        const doc = list[i];
        const f = list[i + 1];
        scores[doc] += (idf * f * (k1 + 1)) / (f + k1 * (1 - b + (b * lengths[doc]) / avgLength));
      }
    }
    return scores;
  }

  search(query, k) {
    const scores = this.scores(query);
    const order = Array.from({ length: this.n }, (_, i) => i);
    order.sort((x, y) => scores[y] - scores[x] || x - y);
    return order.slice(0, k);
  }
}
