// Builds a query answer without an LLM: the best-supported sentence of the top evidence, or an abstention.
import type { Hit } from "./recall-search.js";
import { sentences, terms } from "./text.js";

export interface Answer {
  readonly finalAnswer: string;
  readonly confidence: number;
  /** Indices into the hits that grounded the answer; empty on abstention. */
  readonly citations: number[];
}

export const ABSTENTION = "No stored memory answers this question.";

/** Below this much support the answer abstains rather than guess. */
const MIN_SUPPORT = 0.2;
/** How many top hits the answer may draw its sentence from. */
const ANSWER_DEPTH = 3;

export function composeAnswer(query: string, hits: readonly Hit[]): Answer {
  const top = hits[0];
  if (top === undefined || top.score < MIN_SUPPORT || top.overlap === 0) {
    return { finalAnswer: ABSTENTION, confidence: top ? Math.min(0.2, top.score) : 0, citations: [] };
  }
  const queryTerms = new Set(terms(query));
  let best = { sentence: top.entry.content, index: 0, support: -1 };
  hits.slice(0, ANSWER_DEPTH).forEach((hit, index) => {
    for (const sentence of sentences(hit.entry.content)) {
      const sentenceTerms = terms(sentence);
      const shared = sentenceTerms.filter((t) => queryTerms.has(t)).length;
      // Prefer sentences that cover the question, from better-ranked evidence.
      const support = shared * hit.score;
      if (support > best.support) best = { sentence, index, support };
    }
  });
  const confidence = Math.max(0, Math.min(1, 0.25 + 0.75 * top.score));
  return { finalAnswer: best.sentence, confidence, citations: [best.index] };
}
