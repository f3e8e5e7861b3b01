// Fetches Engram's context for a call (MemoryService.GetContext) and turns it into the system message to inject.
import type { ResolvedMemoryOptions } from "./options.js";

/** The line that tells the model what the injected block is. */
export const CONTEXT_HEADER =
  "Memory of this conversation from Engram (earlier turns and what was learned); use it where it helps.";
/**
 * Tokens (o200k_base) that CONTEXT_HEADER and the blank line after it take, plus one in case the block's first
 * token merges differently at the seam; held back from the budget Engram fills, so the whole message fits.
 */
export const CONTEXT_HEADER_TOKENS = 23;

export interface InjectedContext {
  /** The system message: CONTEXT_HEADER, a blank line, then Engram's context block. */
  readonly message: string;
  /** Tokens of the block as Engram counted them (o200k_base). */
  readonly blockTokens: number;
  /** Ids of the entries in the block, in block order: what a turn's feedback credits. */
  readonly sourceIds: readonly string[];
}

/** Engram's context for `query` in the run, or undefined when the run holds nothing that fits. */
export async function fetchContext(
  options: ResolvedMemoryOptions,
  query: string,
  signal: AbortSignal | undefined,
): Promise<InjectedContext | undefined> {
  const response = await options.client.memory.getContext(
    {
      runId: options.runId,
      query,
      userId: options.userId,
      agentId: options.agentId,
      entryTypes: [...options.entryTypes],
      maxTokenBudget: options.tokenBudget - CONTEXT_HEADER_TOKENS,
    },
    { signal, timeoutMs: options.timeoutMs },
  );
  const block = response.contextBlock.trim();
  if (block === "") return undefined;
  return {
    message: `${CONTEXT_HEADER}\n\n${block}`,
    blockTokens: response.tokenEstimate,
    sourceIds: response.sources.map((s) => s.id).filter((id) => id !== ""),
  };
}
