// Builds a query answer without an LLM: the best-supported sentence(s) of the top evidence, or an abstention.
//
// Confidence rests on two signals that survive a change of ranking function: how much of the query the
// answer covers (term overlap, measured on the chosen sentences rather than taken from `Hit.overlap`, which
// describes the whole entry and counts question words) and how clearly the cited evidence beats the best evidence it does not cite
// (the relative score gap). Raw scores are only compared with each other, never with fixed thresholds.
/** What an answer needs of a ranked hit. */
export interface AnswerHit {
  readonly entry: { readonly content: string };
  readonly score: number;
}
import { jaccard, sentences, terms, words } from "./text.js";

export interface Answer {
  readonly finalAnswer: string;
  /** In [0, 1]; below ABSTAIN_BELOW exactly when the answer is an abstention. */
  readonly confidence: number;
  /** Indices into the hits that grounded the answer; empty on abstention. */
  readonly citations: number[];
}

export const ABSTENTION = "No stored memory answers this question.";

/** Answers with less confidence than this abstain; every abstention reports a confidence below it. */
export const ABSTAIN_BELOW = 0.3;
/** How many top hits the answer may draw its sentences from. */
const ANSWER_DEPTH = 3;
/** Even full coverage of the query by the top hit is lexical evidence, not proof. */
const MAX_CONFIDENCE = 0.95;
/** Share of confidence that depends on the score gap; the rest is coverage alone. */
const GAP_WEIGHT = 0.3;
/** A competitor scoring this far (relatively) below the cited evidence counts as clearly beaten. */
const CLEAR_GAP = 0.5;
/** A second sentence from another hit must cover this much of the query on its own. */
const SECOND_HIT_MIN_COVERAGE = 0.5;
/** ...and that hit must score at least this share of the top hit's score. */
const SECOND_HIT_MIN_RELATIVE_SCORE = 0.5;
/** Sentences sharing this much of their terms (Jaccard) state the same thing: a repeat corroborates. */
const SAME_STATEMENT = 0.8;
/** Questions inside evidence echo the query rather than answer it. */
const QUESTION_PENALTY = 0.5;

/**
 * Question words and auxiliaries the shared stopword list keeps ("when", "does", …). They say what kind of
 * answer is wanted, not what it is about, so they do not count towards coverage.
 */
const QUESTION_WORDS = new Set([
  "who", "whom", "whose", "what", "which", "when", "where", "why", "how",
  "do", "does", "did", "is", "are", "was", "were", "am", "be", "been",
  "can", "could", "should", "would", "will", "shall", "may", "might", "must", "has", "have", "had",
]);

/** The query's content terms: index terms without question words. */
function queryTermsOf(query: string): Set<string> {
  return new Set(terms(words(query).filter((w) => !QUESTION_WORDS.has(w)).join(" ")));
}

interface Candidate {
  readonly hit: number;
  /** Position of the sentence in its hit's content, to keep same-hit sentences in reading order. */
  readonly position: number;
  readonly text: string;
  /** All index terms of the sentence. */
  readonly terms: ReadonlySet<string>;
  /** The query terms this sentence contains. */
  readonly covered: ReadonlySet<string>;
  /** The hit's score relative to the top hit's, in [0, 1]. */
  readonly weight: number;
  /** Share of the sentence's own terms that are query terms: prefers focused sentences on ties. */
  readonly density: number;
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

function candidatesOf(hits: readonly AnswerHit[], queryTerms: ReadonlySet<string>): Candidate[] {
  const topScore = hits[0]?.score ?? 0;
  const out: Candidate[] = [];
  hits.slice(0, ANSWER_DEPTH).forEach((hit, index) => {
    const weight = topScore > 0 ? clamp01(hit.score / topScore) : index === 0 ? 1 : 0;
    sentences(hit.entry.content).forEach((text, position) => {
      const sentenceTerms = terms(text);
      const covered = new Set(sentenceTerms.filter((t) => queryTerms.has(t)));
      if (covered.size === 0) return;
      const density = covered.size / sentenceTerms.length;
      out.push({ hit: index, position, text, terms: new Set(sentenceTerms), covered, weight, density });
    });
  });
  return out;
}

function support(c: Candidate, queryTerms: ReadonlySet<string>, already: ReadonlySet<string>): number {
  let gained = 0;
  for (const term of c.covered) if (!already.has(term)) gained++;
  const question = c.text.endsWith("?") ? QUESTION_PENALTY : 1;
  return (gained / queryTerms.size) * c.weight * question;
}

/** The best sentence, then at most one more that covers query terms the first one misses. */
function chooseSentences(candidates: readonly Candidate[], queryTerms: ReadonlySet<string>): Candidate[] {
  const byBest = (already: ReadonlySet<string>) => (a: Candidate, b: Candidate) =>
    support(b, queryTerms, already) - support(a, queryTerms, already) || b.density - a.density || a.hit - b.hit;
  const first = [...candidates].sort(byBest(new Set()))[0];
  if (first === undefined || support(first, queryTerms, new Set()) <= 0) return [];
  const second = candidates
    .filter((c) => c !== first && support(c, queryTerms, first.covered) > 0)
    // A sentence of the same entry is its context; one from another entry must stand on its own.
    .filter((c) => c.hit === first.hit || (c.covered.size / queryTerms.size >= SECOND_HIT_MIN_COVERAGE && c.weight >= SECOND_HIT_MIN_RELATIVE_SCORE))
    .sort(byBest(first.covered))[0];
  if (second === undefined) return [first];
  if (second.hit !== first.hit) return [first, second];
  return second.position < first.position ? [second, first] : [first, second];
}

/**
 * Hits that repeat a chosen sentence (the same fact stored twice, say) back the answer: they are cited
 * with it rather than counted as rivals. Near-identical wording is required, because sentences on the same
 * topic may well disagree ("port 5433" against "port 5432 until May").
 */
function corroborating(candidates: readonly Candidate[], chosen: readonly Candidate[]): number[] {
  const cited = new Set(chosen.map((c) => c.hit));
  const out: number[] = [];
  for (const c of candidates) {
    if (cited.has(c.hit) || out.includes(c.hit) || c.weight < SECOND_HIT_MIN_RELATIVE_SCORE) continue;
    if (chosen.some((a) => jaccard(a.terms, c.terms) >= SAME_STATEMENT)) out.push(c.hit);
  }
  return out.sort((a, b) => a - b);
}

/** How clearly the cited hits beat the best hit they leave out, in [0, 1]; 1 when nothing competes. */
function margin(hits: readonly AnswerHit[], cited: readonly number[]): number {
  const citedBest = Math.max(...cited.map((i) => hits[i]?.score ?? 0));
  const rivals = hits.filter((_, i) => !cited.includes(i)).map((h) => h.score);
  if (rivals.length === 0) return 1;
  if (citedBest <= 0) return 0;
  return clamp01((citedBest - Math.max(...rivals)) / citedBest / CLEAR_GAP);
}

export function composeAnswer(query: string, hits: readonly AnswerHit[]): Answer {
  const queryTerms = queryTermsOf(query);
  const abstain = (confidence: number): Answer => ({
    finalAnswer: ABSTENTION,
    confidence: Math.min(clamp01(confidence), ABSTAIN_BELOW - 0.01),
    citations: [],
  });
  if (hits.length === 0 || queryTerms.size === 0) return abstain(0);
  const candidates = candidatesOf(hits, queryTerms);
  const chosen = chooseSentences(candidates, queryTerms);
  if (chosen.length === 0) return abstain(0);

  const covered = new Set<string>();
  for (const c of chosen) for (const t of c.covered) covered.add(t);
  const coverage = covered.size / queryTerms.size;
  const citations = [...new Set(chosen.map((c) => c.hit)), ...corroborating(candidates, chosen)];
  const gap = margin(hits, citations);
  const confidence = clamp01(MAX_CONFIDENCE * coverage * (1 - GAP_WEIGHT + GAP_WEIGHT * gap));
  if (confidence < ABSTAIN_BELOW) return abstain(confidence);
  return { finalAnswer: chosen.map((c) => c.text).join(" "), confidence, citations };
}
