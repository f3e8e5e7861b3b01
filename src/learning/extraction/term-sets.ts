// The terms that tell one failure or lesson from another, and how alike two sets of them are: the extractor compares
// these, never raw text, to join failures into chains and to merge lessons that say the same thing.
import { terms, words } from "../../retrieval/text.js";

export const GENERIC_TERMS = new Set(
  terms("error errors failed failure fails exception tried attempted attempt step run got again still issue problem worked works fixed resolved solved succeeded success now then retry"),
);

/** A text's distinctive index terms: stemmed, stopwords and the vocabulary of failing and fixing removed. */
export function keyTerms(text: string, max = 48): Set<string> {
  const out = new Set<string>();
  for (const term of terms(text)) {
    if (GENERIC_TERMS.has(term)) continue;
    out.add(term);
    if (out.size >= max) break;
  }
  return out;
}

/** Words the stopword list drops that flip or bound what a lesson says: "never" vs "always", "before" vs "after". */
const POLARITY = new Set(["never", "always", "must", "should", "not", "no", "don", "doesn", "didn", "isn", "aren", "won", "cannot", "avoid", "before", "after", "without", "only"]);

/**
 * The terms that say what a lesson is, for telling duplicates apart: its index terms plus its polarity words, so that
 * "Never run X" and "Always run X" never merge.
 */
export function identityTerms(text: string): Set<string> {
  const out = new Set(terms(text));
  for (const word of words(text)) if (POLARITY.has(word)) out.add(`!${word}`);
  return out;
}

export function overlaps(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  for (const term of a) if (b.has(term)) return true;
  return false;
}
