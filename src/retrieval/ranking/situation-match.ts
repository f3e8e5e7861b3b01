// How well a question meets the situations a lesson is for, by meaning rather than by shared rare words: each line of
// the question and each situation of the lesson (its `when …` and `while …` conditions, the failure signatures it was
// seen with) reduced to a failure signature and embedded; the best cosine of any pair is the lesson's bearing on the
// question, and the best against the situations it was surfaced in and did not apply to is the case against it.
import { LRUCache } from "lru-cache";
import { cosine, type Embedder } from "../embedder.js";
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

/** Signatures embedded per call to a remote embedder while preparing a question. */
const PREPARE_BATCH = 128;

/**
 * Embeds situation signatures, with a bounded cache. An in-process embedder (word vectors, hashing) embeds on the
 * spot; for a remote one, `prepare` embeds what a question will compare before ranking (ranking itself is
 * synchronous), and what was not prepared is not compared by meaning.
 */
export class SituationVectors {
  readonly #embedder: Embedder;
  readonly #embedNow: ((text: string) => Float32Array) | undefined;
  readonly #cache = new LRUCache<string, Float32Array>({ max: CACHED_VECTORS });

  constructor(embedder: Embedder) {
    this.#embedder = embedder;
    this.#embedNow = embedder.embedOne?.bind(embedder);
  }

  /** Whether signatures are embedded on the spot (nothing to prepare). */
  get inProcess(): boolean {
    return this.#embedNow !== undefined;
  }

  /** The vector of a text's failure signature; undefined when the signature is empty or it was not prepared. */
  vectorOf(text: string): Float32Array | undefined {
    const cached = this.#cache.get(text);
    if (cached !== undefined) return cached.length === 0 ? undefined : cached;
    if (this.#embedNow === undefined) return undefined;
    const signature = signatureOf(text);
    const vector = signature === "" ? new Float32Array(0) : this.#embedNow(signature);
    this.#cache.set(text, vector);
    return vector.length === 0 ? undefined : vector;
  }

  /**
   * Embeds the texts' signatures that are not cached, with a remote embedder (nothing to do for an in-process one).
   * An embedder failure leaves them unprepared: the question is then compared by words only.
   */
  async prepare(texts: Iterable<string>): Promise<void> {
    if (this.inProcess) return;
    const missing = [...new Set(texts)].filter((text) => !this.#cache.has(text)).slice(0, CACHED_VECTORS / 2);
    for (let at = 0; at < missing.length; at += PREPARE_BATCH) {
      const batch = missing.slice(at, at + PREPARE_BATCH).map((text) => ({ text, signature: signatureOf(text) }));
      const toEmbed = batch.filter((b) => b.signature !== "");
      let vectors: Float32Array[];
      try {
        vectors = toEmbed.length === 0 ? [] : await this.#embedder.embed(toEmbed.map((b) => b.signature));
      } catch {
        return;
      }
      const bySignature = new Map(toEmbed.map((b, i) => [b.signature, vectors[i]]));
      for (const { text, signature } of batch) this.#cache.set(text, bySignature.get(signature) ?? new Float32Array(0));
    }
  }

  /** The texts of a lesson's situations, as `fit` compares them. */
  static textsOf(situations: LessonSituations): string[] {
    return [...forTexts(situations), ...situations.notFor];
  }

  /** The texts of a question's parts: each of its first lines and the whole. */
  static partsOf(text: string): string[] {
    const lines = text
      .split(/\n+/)
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .slice(0, MAX_QUESTION_PARTS);
    return lines.length > 1 ? [...lines, text] : lines;
  }

  /** The vectors of a question's parts (see partsOf). */
  questionParts(text: string): Float32Array[] {
    return SituationVectors.partsOf(text).flatMap((part) => this.vectorOf(part) ?? []);
  }

  /** How a lesson's situations fit a question's parts. */
  fit(question: readonly Float32Array[], situations: LessonSituations): SituationFit {
    if (question.length === 0) return { bearing: 0, against: 0 };
    return { bearing: this.#best(question, forTexts(situations)), against: this.#best(question, situations.notFor) };
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

/** The situations a lesson is for: its `when …` conditions (the condition word taken off) and its failure signatures. */
function forTexts(situations: LessonSituations): string[] {
  return [...situations.conditions.filter((c) => SITUATION_CONDITION.test(c)).map((c) => c.replace(SITUATION_CONDITION, "")), ...situations.seen];
}
