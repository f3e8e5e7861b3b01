// Answers a question from ranked hits: with the configured LLM when there is one (falling back on failure),
// otherwise from the best-supported sentences of the evidence. Says why the LLM answer fell back, so a response can
// report itself degraded.
import type { Logger } from "../platform/logger.js";
import { composeAnswer, type Answer } from "./answer.js";
import type { Hit } from "./search-engine.js";
import { ChatError, type ChatCompleter } from "./llm/chat-client.js";
import { AnswerSynthesisError, synthesizeAnswer } from "./llm/answer-synthesizer.js";

/** Why an LLM answer fell back: the call timed out, failed, or its reply was unusable; "" when it did not fall back. */
export type LlmFallback = "" | "timeout" | "error" | "invalid_reply";

export interface AnswerOutcome extends Answer {
  /** True when the LLM wrote the answer. */
  readonly synthesized: boolean;
  readonly fallback: LlmFallback;
}

function fallbackOf(e: unknown): Exclude<LlmFallback, ""> {
  if (e instanceof ChatError) return e.outcome;
  return e instanceof AnswerSynthesisError ? "invalid_reply" : "error";
}

export class Answerer {
  readonly #llm: ChatCompleter | undefined;
  readonly #logger: Logger;

  constructor(llm: ChatCompleter | undefined, logger: Logger) {
    this.#llm = llm;
    this.#logger = logger;
  }

  async answer(query: string, hits: readonly Hit[]): Promise<AnswerOutcome> {
    let fallback: LlmFallback = "";
    if (this.#llm !== undefined && hits.length > 0) {
      try {
        const evidence = hits.map((h) => ({ content: h.entry.content, entryType: h.entry.entryType }));
        const answer = await synthesizeAnswer(this.#llm, query, evidence);
        // The synthesizer validates citations; keep them within the evidence returned to the caller regardless.
        return { ...answer, citations: answer.citations.filter((i) => i >= 0 && i < hits.length), synthesized: true, fallback };
      } catch (e: unknown) {
        fallback = fallbackOf(e);
        // The detail stays in the log (it may name the endpoint); callers learn only the kind of failure.
        this.#logger.warn({ err: e instanceof Error ? e.message : String(e), fallback }, "LLM answer failed; answering without it");
      }
    }
    return { ...composeAnswer(query, hits), synthesized: false, fallback };
  }
}
