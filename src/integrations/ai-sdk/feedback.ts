// Feedback on a turn: LearningService.RecordOutcome on the run, crediting the entries the turn's context held and
// the turn's own entries, at most once per turn.
import type { ResolvedMemoryOptions } from "./options.js";
import type { TurnLog } from "./turn-log.js";

export type FeedbackOutcome = "success" | "failure" | "partial" | "neutral";

export interface Feedback {
  /** How the turn went. Default: derived by Engram from `signal` (> 0 success, < 0 failure, 0 neutral). */
  readonly outcome?: FeedbackOutcome | undefined;
  /** Reward (> 0) or penalty (< 0) in [-1, 1]. Default: from `outcome` (success 1, partial 0.5, failure −1). */
  readonly signal?: number | undefined;
  /** Why; stored with the outcome. */
  readonly rationale?: string | undefined;
  /** The call the feedback is about (`providerMetadata.engram.turnId` of its result). Default: the latest call. */
  readonly turnId?: string | undefined;
  /** The answer was applied and verified in production: the outcome weighs twice. */
  readonly verifiedInProduction?: boolean | undefined;
}

export interface FeedbackResult {
  /** Id of the stored outcome (the first one's when this turn already had feedback). */
  readonly outcomeId: string;
  /** True when the turn already had feedback: nothing was applied again. */
  readonly deduplicated: boolean;
  /** Entries whose confidence the outcome moved. */
  readonly entriesReinforced: number;
  /** The turn it was recorded for; undefined for run-level feedback given before any call. */
  readonly turnId: string | undefined;
}

/** RecordOutcome takes at most this many contributing entries. */
const MAX_ENTRY_IDS = 100;

export async function recordFeedback(options: ResolvedMemoryOptions, turns: TurnLog, feedback: Feedback): Promise<FeedbackResult> {
  const turnId = feedback.turnId ?? turns.latestTurnId;
  const turn = turnId === undefined ? undefined : turns.get(turnId);
  const stored = turn === undefined ? [] : await turn.stored;
  const entryIds = [...new Set([...(turn?.contextIds ?? []), ...stored])].slice(0, MAX_ENTRY_IDS);
  const response = await options.client.learning.recordOutcome(
    {
      runId: options.runId,
      outcome: feedback.outcome ?? "",
      signal: feedback.signal ?? 0,
      rationale: feedback.rationale ?? "",
      agentId: options.agentId,
      userId: options.userId,
      verifiedInProduction: feedback.verifiedInProduction ?? false,
      entryIds,
      // One outcome per turn: a retried or repeated feedback call is answered with the first outcome.
      idempotencyKey: turnId === undefined ? "" : `ai-sdk:${turnId}`,
    },
    { timeoutMs: options.timeoutMs },
  );
  return { outcomeId: response.outcomeId, deduplicated: response.deduplicated, entriesReinforced: response.entriesReinforced, turnId };
}
