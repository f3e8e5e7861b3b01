// How outcomes change what Engram believes about an entry, and how a lesson moves between scopes.
//
// Confidence is the mean of a Beta posterior: evidenceFor / (evidenceFor + evidenceAgainst), seeded with two
// pseudo-outcomes at the initial confidence. An outcome adds |signal| (twice that when verified in production) to
// evidenceFor when positive, to evidenceAgainst when negative.
//
// Promotion of a lesson or rule whose scope is `run` or `session` (target: `global`):
//   ""          → proposed     it is confirmed: re-learned in another run, or credited by a positive outcome
//   proposed    → auditioning  a positive outcome credits it (a proposal made by an outcome goes on at once)
//   auditioning → (promoted)   AUDITION_WINS positive outcomes from other runs and confidence ≥ PROMOTE_CONFIDENCE:
//                              the scope becomes the target and the state clears
//   proposed or auditioning → quarantined   AUDITION_LOSSES negative outcomes from other runs, two negative outcomes
//                              in a row, or confidence below QUARANTINE_CONFIDENCE
//   "" (any scope) → quarantined   QUARANTINE_STREAK negative outcomes in a row: its fix stopped working
// A quarantined lesson is never retrieved as guidance. ResolveLessonPromotion ends any pending state by hand; a
// refused promotion is never proposed again.
//
// Untrusted knowledge (made from or stated in text read from a tool, a document or a web page; see
// memory/evidence-trust.ts) is never proposed, auditioned or promoted: neither outcomes nor re-learning move it. It
// becomes trusted when it is learned again from trusted evidence (a merge in reflection, unless its own text reads as an
// instruction) or when a person accepts it with ResolveLessonPromotion; from then on the machine above applies.
import type { EntryAuditEvent, EntryRecord, LearningState, PromotionState } from "../storage/entry-record.js";
import { MAX_CONFIRMED_RUNS } from "../storage/entry-record.js";
import type { Provenance, Trust } from "../storage/provenance.js";
import { evidenceTrust } from "../memory/evidence-trust.js";
import { INSTRUCTION_FLAG } from "../memory/instruction-detector.js";

export const AUDITION_WINS = 2;
export const AUDITION_LOSSES = 2;
export const PROMOTE_CONFIDENCE = 0.7;
export const QUARANTINE_CONFIDENCE = 0.4;
export const QUARANTINE_STREAK = 3;
/** Weight of an outcome verified in production, relative to an ordinary one. */
export const VERIFIED_WEIGHT = 2;
/** A re-learned lesson counts as this share of a positive outcome of the candidate's confidence. */
const RELEARNED_WEIGHT = 0.5;

/** A change of promotion state, audited on the lesson and announced on the event stream. */
export interface PromotionMove {
  readonly from: PromotionState;
  /** The new state; `promoted` when the lesson took its target scope; `accepted` or `refused` by a person. */
  readonly to: PromotionState | "promoted" | "accepted" | "refused";
  readonly targetScope: string;
  readonly reason: string;
}

/** An entry's learning after some event: the fields to store and the promotion moves made. */
export interface Learned {
  readonly learning: LearningState;
  readonly confidence: number;
  readonly lessonScope: string;
  readonly moves: readonly PromotionMove[];
  /** Why a promotion the event would have made was withheld (untrusted knowledge); audited once. */
  readonly withheld?: string;
  /** The entry's new provenance when the event made it trusted (corroboration, a person's acceptance). */
  readonly provenance?: Provenance;
  /** Why its trust changed; set with `provenance`. */
  readonly trustReason?: string;
  /** The entry's new ingest flags when a person accepted flagged knowledge (`instruction_like` lifted). */
  readonly flags?: readonly string[];
}

/** Why untrusted knowledge is not proposed for promotion. */
export const UNTRUSTED_WITHHELD = "made from untrusted evidence (tool output, document or web page): not proposed until a trusted source or a person corroborates it";

export interface Credit {
  /** In [-1, 1], not 0. */
  readonly signal: number;
  readonly verifiedInProduction: boolean;
  /** The run whose outcome it is. */
  readonly runId: string;
  readonly outcomeId: string;
}

function isKnowledge(entry: EntryRecord): boolean {
  return entry.entryType === "lesson" || entry.entryType === "rule";
}

export function posteriorMean(learning: Pick<LearningState, "evidenceFor" | "evidenceAgainst">): number {
  const total = learning.evidenceFor + learning.evidenceAgainst;
  return total <= 0 ? 0 : Math.min(1, Math.max(0, learning.evidenceFor / total));
}

/** An entry's learning as it is: for a change that teaches nothing about its belief (a situation gained or dropped). */
export function unchanged(entry: EntryRecord): Learned {
  return { learning: entry.learning, confidence: entry.confidence, lessonScope: entry.lessonScope, moves: [] };
}

/** Applies one outcome to an entry. */
export function reinforce(entry: EntryRecord, credit: Credit): Learned {
  const weight = Math.abs(credit.signal) * (credit.verifiedInProduction ? VERIFIED_WEIGHT : 1);
  const positive = credit.signal > 0;
  const before = entry.learning;
  const elsewhere = credit.runId !== entry.runId;
  let learning: LearningState = {
    ...before,
    evidenceFor: before.evidenceFor + (positive ? weight : 0),
    evidenceAgainst: before.evidenceAgainst + (positive ? 0 : weight),
    reinforcementCount: before.reinforcementCount + 1,
    verifiedInProduction: before.verifiedInProduction || (positive && credit.verifiedInProduction),
    negativeStreak: positive ? 0 : before.negativeStreak + 1,
    auditionWins: before.auditionWins + (before.promotionState === "auditioning" && elsewhere && positive ? 1 : 0),
    auditionLosses: before.auditionLosses + (before.promotionState === "auditioning" && elsewhere && !positive ? 1 : 0),
  };
  const confidence = posteriorMean(learning);
  if (!isKnowledge(entry)) return { learning, confidence, lessonScope: entry.lessonScope, moves: [] };
  const moves: PromotionMove[] = [];
  let scope = entry.lessonScope;
  const move = (to: PromotionState | "promoted", targetScope: string, reason: string): void => {
    moves.push({ from: learning.promotionState, to, targetScope, reason });
    if (to === "promoted") {
      scope = targetScope;
      learning = { ...learning, promotionState: "", promotionTargetScope: "", auditionWins: 0, auditionLosses: 0 };
    } else {
      learning = { ...learning, promotionState: to, promotionTargetScope: targetScope };
    }
  };
  const state = (): PromotionState => learning.promotionState;
  const untrusted = evidenceTrust(entry) === "untrusted";
  const withheld = untrusted && positive && state() === "" && canBeProposed(entry, learning, scope, true) ? UNTRUSTED_WITHHELD : undefined;
  if (positive && state() === "" && canBeProposed(entry, learning, scope)) move("proposed", "global", `confirmed by a positive outcome (${credit.outcomeId})`);
  if (positive && state() === "proposed" && !untrusted) {
    move("auditioning", learning.promotionTargetScope, `credited by a positive outcome (${credit.outcomeId}); recalled in other runs at reduced weight`);
  }
  if (state() === "auditioning" && !untrusted && learning.auditionWins >= AUDITION_WINS && confidence >= PROMOTE_CONFIDENCE) {
    move("promoted", learning.promotionTargetScope, `${learning.auditionWins} positive outcomes in other runs, confidence ${confidence.toFixed(2)}`);
  }
  if (!positive && (state() === "proposed" || state() === "auditioning")) {
    const why =
      learning.auditionLosses >= AUDITION_LOSSES
        ? `${learning.auditionLosses} negative outcomes in other runs`
        : learning.negativeStreak >= 2
          ? `${learning.negativeStreak} negative outcomes in a row`
          : confidence < QUARANTINE_CONFIDENCE
            ? `confidence fell to ${confidence.toFixed(2)}`
            : "";
    if (why !== "") move("quarantined", learning.promotionTargetScope, why);
  }
  if (!positive && state() === "" && learning.negativeStreak >= QUARANTINE_STREAK) {
    move("quarantined", scope, `${learning.negativeStreak} negative outcomes in a row (${credit.outcomeId})`);
  }
  return { learning, confidence, lessonScope: scope, moves, withheld };
}

/**
 * A lesson re-learned (merged) from new evidence: in another run it is confirmed and may be proposed. `by` is the trust
 * of the evidence it was learned from now: untrusted evidence neither raises its confidence nor proposes it.
 */
export function relearn(entry: EntryRecord, runId: string, candidateConfidence: number, newEvidence: boolean, by: Trust = "trusted"): Learned {
  const before = entry.learning;
  const confirmedRuns = before.confirmedRuns.includes(runId) ? before.confirmedRuns : [...before.confirmedRuns, runId].slice(-MAX_CONFIRMED_RUNS);
  // Untrusted evidence repeating a lesson is no reason to believe it more: a planted page reads the same every time.
  const counts = newEvidence && by === "trusted";
  let learning: LearningState = {
    ...before,
    confirmedRuns,
    evidenceFor: before.evidenceFor + (counts ? RELEARNED_WEIGHT * candidateConfidence : 0),
  };
  const confidence = counts ? posteriorMean(learning) : entry.confidence;
  const moves: PromotionMove[] = [];
  const proposable = isKnowledge(entry) && runId !== entry.runId && learning.promotionState === "" && canBeProposed(entry, learning, entry.lessonScope, true);
  if (proposable && (evidenceTrust(entry) === "untrusted" || by === "untrusted")) {
    const withheld = evidenceTrust(entry) === "untrusted" ? UNTRUSTED_WITHHELD : "re-learned from untrusted evidence: not proposed for promotion";
    return { learning, confidence, lessonScope: entry.lessonScope, moves, withheld };
  }
  if (proposable) {
    moves.push({ from: "", to: "proposed", targetScope: "global", reason: `re-learned in run ${JSON.stringify(runId)}` });
    learning = { ...learning, promotionState: "proposed", promotionTargetScope: "global" };
  }
  return { learning, confidence, lessonScope: entry.lessonScope, moves };
}

/** Whether the entry may be proposed for promotion; `ignoringTrust` asks whether it could but for its trust. */
function canBeProposed(entry: EntryRecord, learning: LearningState, scope: string, ignoringTrust = false): boolean {
  return (
    scope !== "global" &&
    !learning.promotionRefused &&
    entry.validationStatus !== "invalidated" &&
    !isStaleRecordLike(entry) &&
    (ignoringTrust || evidenceTrust(entry) === "trusted")
  );
}

/** The provenance of knowledge made trusted: origin and lineage kept, trust raised. */
export function trusted(entry: EntryRecord): Provenance {
  return { ...entry.provenance, trust: "trusted" };
}

function isStaleRecordLike(entry: EntryRecord): boolean {
  return entry.stale || entry.supersededBy !== "";
}

/**
 * A person's decision on a pending promotion, or on untrusted knowledge (which is never proposed): accepting makes it
 * trusted (the person corroborates it), and promotable from then on; refusing it means it is never proposed again.
 */
export function resolvePromotion(entry: EntryRecord, accept: boolean, reason: string): Learned & { validationStatus: string } {
  const before = entry.learning;
  const corroborated = accept && evidenceTrust(entry) === "untrusted";
  const quarantined = before.promotionState === "quarantined";
  const learning: LearningState = {
    ...before,
    promotionState: "",
    promotionTargetScope: "",
    promotionRefused: before.promotionRefused || !accept,
    auditionWins: 0,
    auditionLosses: 0,
    negativeStreak: accept ? 0 : before.negativeStreak,
  };
  return {
    learning,
    confidence: entry.confidence,
    lessonScope: accept && before.promotionTargetScope !== "" ? before.promotionTargetScope : entry.lessonScope,
    // Refusing a quarantined lesson confirms the quarantine: it stays out of guidance as invalidated.
    validationStatus: !accept && quarantined ? "invalidated" : entry.validationStatus,
    moves: [{ from: before.promotionState, to: accept ? "accepted" : "refused", targetScope: before.promotionTargetScope, reason: `${accept ? "accepted" : "refused"} by a person${reason === "" ? "" : `: ${reason}`}` }],
    ...(corroborated ? { provenance: trusted(entry), flags: entry.flags.filter((f) => f !== INSTRUCTION_FLAG), trustReason: `accepted by a person${reason === "" ? "" : `: ${reason}`}` } : {}),
  };
}

/** The audit events of promotion moves (field `promotion`). */
export function promotionAudit(moves: readonly PromotionMove[], at: number, agentId: string, reason = ""): EntryAuditEvent[] {
  return moves.map((m) => ({
    at,
    field: "promotion",
    from: m.from === "" ? "none" : m.from,
    to: m.to === "" ? "none" : m.to,
    reason: reason === "" ? m.reason : `${m.reason}: ${reason}`,
    agentId,
  }));
}
