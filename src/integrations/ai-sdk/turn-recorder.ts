// Stores one conversation turn in the run (MemoryService.BatchInsert): the user's message as a `fact` written by a
// human, the model's reply as a `trace` written by the agent. BatchInsert answers once both are durable and
// searchable, so the very next call's context can draw on them.
import type { ResolvedMemoryOptions } from "./options.js";

export interface Turn {
  /** The middleware's id of the model call, stored in each entry's metadata as `turn_id`. */
  readonly turnId: string;
  /** New user text of the call; "" when the call continues a turn (tool results) and has none. */
  readonly userText: string;
  /** Text the model generated; "" when it only called tools. */
  readonly replyText: string;
  readonly modelId: string;
}

/** Prefixes that keep who said what readable in the context block and in activity listings. */
export const USER_PREFIX = "User: ";
export const ASSISTANT_PREFIX = "Assistant: ";

/** Stores the turn's non-empty messages and returns their entry ids (none when both are empty). */
export async function recordTurn(options: ResolvedMemoryOptions, turn: Turn): Promise<string[]> {
  const metadata = (role: string) => JSON.stringify({ integration: "ai-sdk", role, turn_id: turn.turnId, model: turn.modelId });
  const items = [
    ...(turn.userText === ""
      ? []
      : [{ itemId: "user", text: USER_PREFIX + turn.userText, entryType: "fact", source: "human", metadataJson: metadata("user") }]),
    ...(turn.replyText === ""
      ? []
      : [{ itemId: "assistant", text: ASSISTANT_PREFIX + turn.replyText, entryType: "trace", source: "agent", metadataJson: metadata("assistant") }]),
  ].map((item) => ({ ...item, userId: options.userId }));
  if (items.length === 0) return [];
  const response = await options.client.memory.batchInsert(
    { runId: options.runId, agentId: options.agentId, items },
    { timeoutMs: options.timeoutMs },
  );
  const failed = response.itemResults.filter((r) => !r.success);
  if (failed.length > 0) {
    throw new Error(`Engram did not store the turn: ${failed.map((r) => `${r.itemId}: ${r.error}`).join("; ")}`);
  }
  return response.itemResults.map((r) => r.entryId).filter((id) => id !== "");
}
