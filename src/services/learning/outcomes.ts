// Run-level and step-level outcome routes: field validation, then the learning domain's Outcomes.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import { OUTCOMES, type Outcome } from "../../learning/outcome-store.js";
import type { Outcomes } from "../../learning/outcomes.js";
import { bounded, content, jsonObject, oneOf, required } from "../memory/validate.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "recordOutcome" | "recordStepOutcome">;

/**
 * Contributing entries one outcome may name: each is rewritten in the outcome's one transaction, so the bound keeps an
 * outcome to a few milliseconds (a context block's sources are far fewer).
 */
const MAX_ENTRY_IDS = 100;
/** The signal an outcome carries when the request leaves it 0. */
const SIGNAL_OF: Readonly<Record<Outcome, number>> = { success: 1, partial: 0.5, neutral: 0, failure: -1 };

export function outcomeHandlers(outcomes: Outcomes): Handlers {
  return {
    async recordOutcome(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const given = signalOf(req.signal);
      const outcome: Outcome = req.outcome === "" ? (given > 0 ? "success" : given < 0 ? "failure" : "neutral") : oneOf("outcome", req.outcome, OUTCOMES, "neutral");
      if (req.entryIds.length > MAX_ENTRY_IDS) throw invalidArgument("entry_ids", `holds ${req.entryIds.length} ids; at most ${MAX_ENTRY_IDS}`);
      const result = await outcomes.record({
        owner: caller.userId,
        runId,
        referenceId: bounded("reference_id", req.referenceId),
        outcome,
        signal: given === 0 ? SIGNAL_OF[outcome] : given,
        rationale: content("rationale", req.rationale, true),
        agentId: bounded("agent_id", req.agentId),
        userId: bounded("user_id", req.userId),
        verifiedInProduction: req.verifiedInProduction,
        entryIds: req.entryIds.map((id, i) => bounded(`entry_ids[${i}]`, id)).filter((id) => id !== ""),
        idempotencyKey: bounded("idempotency_key", req.idempotencyKey),
      });
      return {
        success: true,
        reinforcementCount: result.reference?.learning.reinforcementCount ?? 0,
        updatedConfidence: result.reference?.confidence ?? 0,
        outcomeId: result.outcomeId,
        deduplicated: result.deduplicated,
        entriesReinforced: result.entriesReinforced,
        skippedEntryIds: [...result.skippedEntryIds],
        credits: result.credits.map((c) => ({ entryId: c.entryId, effect: c.effect, reason: c.reason })),
      };
    },

    async recordStepOutcome(req, ctx) {
      const caller = callerOf(ctx);
      const stored = await outcomes.recordStep({
        owner: caller.userId,
        runId: required("run_id", req.runId),
        stepId: required("step_id", req.stepId),
        stepName: bounded("step_name", req.stepName),
        outcome: oneOf("outcome", required("outcome", req.outcome), OUTCOMES, "neutral"),
        signal: signalOf(req.signal),
        rationale: content("rationale", req.rationale, true),
        directiveHint: content("directive_hint", req.directiveHint, true),
        agentId: bounded("agent_id", req.agentId),
        userId: bounded("user_id", req.userId),
        metadataJson: jsonObject("metadata_json", req.metadataJson),
      });
      return { stepOutcomeId: stored.id, accepted: true };
    },
  };
}

function signalOf(value: number): number {
  if (!Number.isFinite(value)) throw invalidArgument("signal", "must be a number");
  return Math.min(1, Math.max(-1, value));
}
