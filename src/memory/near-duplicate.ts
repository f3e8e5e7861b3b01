// When two facts say the same thing: the test consolidation applies before merging one into the other. Agents' text is
// full of identifiers (ports, hashes, paths, versions, ids) that one character changes the meaning of, so beyond
// equal text the test asks for everything at once: near-identical vectors, near-identical words, exactly the same
// identifiers and the same negations. A pair it is unsure of stays two entries; a wrong merge would lose a fact.
import { jaccard, words } from "../retrieval/text.js";

/** Cosine similarity two texts' vectors reach at least to count as near-duplicates (with everything below). */
export const NEAR_DUPLICATE_COSINE = 0.95;
/** Share of distinct words two texts have in common at least (Jaccard over lowercase words). */
export const NEAR_DUPLICATE_WORD_OVERLAP = 0.85;

const NEGATIONS: ReadonlySet<string> = new Set(["not", "no", "never", "none", "nothing", "cannot", "without", "nor", "neither", "t", "isnt", "dont", "doesnt", "didnt", "wont", "cant"]);
/** Characters inside a token that make it an identifier: paths, dotted names, snake_case, host:port, key=value. */
const IDENTIFIER_MARK = /[\p{N}/\\._:#@=$~-]|\p{Ll}\p{Lu}/u;
/** Punctuation around a token that belongs to the sentence, not to it. */
const EDGE_PUNCTUATION = /^[\s"'`([{<,;!?]+|[\s"'`)\]}>,;!?.:]+$/gu;

/** Text as compared for equality: Unicode-normalised, runs of white space as one space, no sentence-final stop. */
export function normalisedText(text: string): string {
  return text.normalize("NFKC").replace(/\s+/gu, " ").trim().replace(/[.!;]+$/u, "");
}

/** The identifiers of a text, exactly as written: tokens that hold a digit or an inner mark (see IDENTIFIER_MARK). */
export function identifiersOf(text: string): Set<string> {
  const found = new Set<string>();
  for (const raw of text.normalize("NFKC").split(/\s+/u)) {
    const token = raw.replace(EDGE_PUNCTUATION, "");
    if (token !== "" && IDENTIFIER_MARK.test(token)) found.add(token);
  }
  return found;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const item of a) if (!b.has(item)) return false;
  return true;
}

function negationsOf(wordSet: ReadonlySet<string>): Set<string> {
  return new Set([...wordSet].filter((w) => NEGATIONS.has(w)));
}

/** Whether two texts, whose vectors have cosine similarity `cosine`, say the same thing (see the module comment). */
export function isNearDuplicate(a: string, b: string, cosine: number): boolean {
  if (normalisedText(a) === normalisedText(b)) return true;
  if (cosine < NEAR_DUPLICATE_COSINE) return false;
  if (!sameSet(identifiersOf(a), identifiersOf(b))) return false;
  const wordsA = new Set(words(a.normalize("NFKC")));
  const wordsB = new Set(words(b.normalize("NFKC")));
  if (!sameSet(negationsOf(wordsA), negationsOf(wordsB))) return false;
  return jaccard(wordsA, wordsB) >= NEAR_DUPLICATE_WORD_OVERLAP;
}

/** Of two near-duplicates, whether `a` is the one to keep: the more complete text (more words), else the older. */
export function keepsFirst(a: { readonly content: string; readonly seq: number }, b: { readonly content: string; readonly seq: number }): boolean {
  const wordsA = words(a.content).length;
  const wordsB = words(b.content).length;
  return wordsA !== wordsB ? wordsA > wordsB : a.seq < b.seq;
}
