// Answers a question from ranked hits: with the configured LLM when there is one (falling back on failure),
// otherwise from the best-supported sentences of the evidence.
import type { Logger } from "../../platform/logger.js";
import { composeAnswer, type Answer } from "../../retrieval/answer.js";
import type { Hit } from "../../retrieval/search-engine.js";
import type { ChatCompleter } from "../../retrieval/llm/chat-client.js";
import { synthesizeAnswer } from "../../retrieval/llm/answer-synthesizer.js";

export class Answerer {
  readonly #llm: ChatCompleter | undefined;
  readonly #logger: Logger;

  constructor(llm: ChatCompleter | undefined, logger: Logger) {
    this.#llm = llm;
    this.#logger = logger;
  }

  async answer(query: string, hits: readonly Hit[]): Promise<Answer & { synthesized: boolean }> {
    if (this.#llm !== undefined && hits.length > 0) {
      try {
        const evidence = hits.map((h) => ({ content: h.entry.content, entryType: h.entry.entryType }));
        const answer = await synthesizeAnswer(this.#llm, query, evidence);
        // The synthesizer validates citations; keep them within the evidence returned to the caller regardless.
        return { ...answer, citations: answer.citations.filter((i) => i >= 0 && i < hits.length), synthesized: true };
      } catch (e: unknown) {
        this.#logger.warn({ err: e instanceof Error ? e.message : String(e) }, "LLM answer failed; answering without it");
      }
    }
    return { ...composeAnswer(query, hits), synthesized: false };
  }
}
