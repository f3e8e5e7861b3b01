// How well a question meets the situations a lesson is for, by meaning rather than by shared rare words: each line of
// the question and each situation of the lesson (its `when …` and `while …` conditions, the failure signatures it was
// seen with) reduced to a failure signature and embedded; the best cosine of any pair is the lesson's bearing on the
// question, and the best against the situations it was surfaced in and did not apply to is the case against it.
import { LRUCache } from "lru-cache";
import { cosine } from "../embedder.js";
import { signatureOf, type LessonSituations } from "../situations.js";

/** Lines of a question compared one by one (an agent's question is a task and the log lines it met). */
const MAX_QUESTION_PARTS = 12;
/** Signature vectors kept; a situation is embedded once while it stays in use. */
const CACHED_VECTORS = 20_000;
/**
 * Conditions that describe a failure met (`when …`). The task a lesson was learned in (`while …`) is not compared by
 * meaning: every task of a kind reads alike, and the plain ones meet no pitfall; tasks match by their distinctive
 * words (ranking/cross-run.ts). `about …` and `in step …` are too short to carry meaning.
 */
const SITUATION_CONDITION = /^(?:when|whenever|if)\s+/i;

export interface SituationFit {
  /** Best similarity of a question part to a situation the lesson is for, in [0, 1]. */
  readonly bearing: number;
  /** Best similarity of a question part to a situation it did not apply to, in [0, 1]. */
  readonly against: number;
}

/** Embeds situation signatures synchronously, with a bounded cache; without a local embedder it knows nothing. */
export class SituationVectors {
  readonly #embed: ((text: string) => Float32Array) | undefined;
  readonly #cache = new LRUCache<string, Float32Array>({ max: CACHED_VECTORS });

  constructor(embedOne: ((text: string) => Float32Array) | undefined) {
    this.#embed = embedOne;
  }

  get available(): boolean {
    return this.#embed !== undefined;
  }

  /** The vector of a text's failure signature; undefined when the signature is empty or nothing embeds locally. */
  vectorOf(text: string): Float32Array | undefined {
    if (this.#embed === undefined) return undefined;
    const cached = this.#cache.get(text);
    if (cached !== undefined) return cached.length === 0 ? undefined : cached;
    const signature = signatureOf(text);
    const vector = signature === "" ? new Float32Array(0) : this.#embed(signature);
    this.#cache.set(text, vector);
    return vector.length === 0 ? undefined : vector;
  }

  /** The question's parts: each of its first lines and the whole. */
  questionParts(text: string): Float32Array[] {
    const lines = text
      .split(/\n+/)
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .slice(0, MAX_QUESTION_PARTS);
    const parts = lines.length > 1 ? [...lines, text] : lines;
    return parts.flatMap((part) => this.vectorOf(part) ?? []);
  }

  /** How a lesson's situations fit a question's parts. */
  fit(question: readonly Float32Array[], situations: LessonSituations): SituationFit {
    if (question.length === 0) return { bearing: 0, against: 0 };
    const forTexts = [...situations.conditions.filter((c) => SITUATION_CONDITION.test(c)).map((c) => c.replace(SITUATION_CONDITION, "")), ...situations.seen];
    return { bearing: this.#best(question, forTexts), against: this.#best(question, situations.notFor) };
  }

  #best(question: readonly Float32Array[], texts: readonly string[]): number {
    let best = 0;
    for (const text of texts) {
      const vector = this.vectorOf(text);
      if (vector === undefined) continue;
      for (const part of question) best = Math.max(best, cosine(part, vector));
    }
    return best;
  }
}
