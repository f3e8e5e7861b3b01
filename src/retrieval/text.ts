// Tokenizing for retrieval: lowercase word tokens, English stopwords removed, Porter-stemmed terms.
import { eng as englishStopwords } from "stopword";
import { stemmer } from "stemmer";

const STOPWORDS = new Set(englishStopwords);
const WORD = /[\p{L}\p{N}]+/gu;

/** Lowercase words of a text, in order. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** Index terms of a text: its words without stopwords, stemmed. */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const word of words(text)) {
    if (!STOPWORDS.has(word)) out.push(stemmer(word));
  }
  return out;
}

/** Splits a text into sentences, keeping each one's text trimmed. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
