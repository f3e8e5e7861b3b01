// Tokenizing for retrieval: lowercase word tokens, English stopwords removed, Porter-stemmed terms.
import { eng as englishStopwords } from "stopword";
import { stemmer } from "stemmer";
import { fnv1a } from "./hash.js";

const STOPWORDS = new Set(englishStopwords);

/** Whether a lowercase word is an English stopword (not indexed). */
export const isStopword = (word: string): boolean => STOPWORDS.has(word);
const WORD = /[\p{L}\p{N}]+/gu;

/** Lowercase words of a text, in order. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/**
 * Words longer than this many characters are indexed by a prefix and a hash of the whole word: no real word is this
 * long (a base64 blob or a minified line is), and bounded terms keep an entry's stored term record and the in-memory
 * posting keys small (earlier builds stored each term in an LMDB key, which may not exceed 1,978 bytes).
 */
export const MAX_TERM_CHARS = 64;

/**
 * Porter stems of recent words. Running text repeats a small vocabulary (Zipf), and the stemmer's suffix rules cost
 * a few regular expressions per word: tokenising is a large part of every write and query. Cleared when full, so it
 * stays bounded whatever the input.
 */
const STEMS = new Map<string, string>();
const MAX_STEMS = 50_000;

/** The Porter stem of a lowercase word, memoised (see STEMS). */
export function stem(word: string): string {
  // Over-long words are stemmed each time: the cache bounds its count, and they would make its bytes unbounded.
  if (word.length > MAX_TERM_CHARS) return stemmer(word);
  let stemmed = STEMS.get(word);
  if (stemmed === undefined) {
    if (STEMS.size >= MAX_STEMS) STEMS.clear();
    stemmed = stemmer(word);
    STEMS.set(word, stemmed);
  }
  return stemmed;
}

/** Index terms of a text: its words without stopwords, stemmed; over-long words shortened (see MAX_TERM_CHARS). */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const word of words(text)) {
    if (word.length > MAX_TERM_CHARS) out.push(`${word.slice(0, MAX_TERM_CHARS - 9)}~${fnv1a(word).toString(16).padStart(8, "0")}`);
    else if (!STOPWORDS.has(word)) out.push(stem(word));
  }
  return out;
}

/** How often each index term occurs in a text: an entry's postings. */
export function termFrequencies(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of terms(text)) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}

/** Splits a text into sentences, keeping each one's text trimmed. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Shared terms over all terms of two sets (Jaccard); 0 when both are empty. */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}
