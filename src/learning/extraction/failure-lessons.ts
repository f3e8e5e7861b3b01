// The lesson a failure teaches, worded from its chains: what to do when the symptom comes back (the fix that worked,
// what not to retry), how often it happened, and how sure the evidence makes us.
import { asSentence, clip } from "./phrasing.js";
import { attemptOf, hasError, symptomOf } from "./lesson-text.js";
import { idList, roundConfidence, withImportance, type Draft } from "./lesson-drafts.js";
import { SAME_FAILURE, type Chain, type Signal } from "./failure-chains.js";
import { LIMITS } from "./reading-limits.js";
import { jaccard } from "../../retrieval/text.js";
import { keyTerms } from "./term-sets.js";
import { attemptPhrase, fixClause } from "./verb-forms.js";

/**
 * How many times a failure happened: each failed outcome counts, and error reports count on their own only away from a
 * failed outcome (a trace and the outcome of the same step describe one failure) and when worded alike.
 */
function occurrences(signals: readonly Signal[]): number {
  const outcomes = signals.filter((s) => s.fromOutcome);
  // A trace next to a failed step's outcome, or tagged with that step, reports the same failure.
  const loose = signals.filter((s) => !s.fromOutcome && !outcomes.some((o) => Math.abs(o.index - s.index) <= 3 || (s.item.stepId !== "" && s.item.stepId === o.item.stepId)));
  const firstLoose = loose[0];
  if (firstLoose === undefined) return new Set(outcomes.map((s) => s.item.id)).size;
  const alike = new Set(loose.filter((s) => s === firstLoose || jaccard(s.terms, firstLoose.terms) >= SAME_FAILURE).map((s) => s.item.id));
  return new Set(outcomes.map((s) => s.item.id)).size + alike.size;
}

/** The lesson of one failure, told by the chains that describe it; undefined when there is none to tell. */
export function failureDraft(chains: readonly Chain[]): Draft | undefined {
  const signals = chains.flatMap((c) => c.failures);
  const symptomSignal = signals.find((s) => s.hard) ?? signals[0];
  if (symptomSignal === undefined) return undefined;
  const times = occurrences(signals);
  const repeated = times >= 2;
  // The caller's directive hint already says what to do about a single failure; a repeated one still makes a rule.
  if (!repeated && chains.some((c) => c.hinted)) return undefined;
  const symptom = symptomOf(symptomSignal.text);
  const fixed = chains.find((c) => c.fix !== "" && c.confirmedBy !== undefined) ?? chains.find((c) => c.fix !== "");
  const fix = fixed?.fix ?? "";
  const confirmed = chains.some((c) => c.confirmedBy !== undefined);
  const step = signals.find((s) => s.item.stepName !== "")?.item.stepName ?? "";
  const attempt = attemptFor(signals, chains, symptom, fix);
  const ids = [...new Set(chains.flatMap((c) => c.ids))].slice(0, LIMITS.ids);
  const texts = [...signals.map((s) => s.text), fix];

  let content: string;
  let confidence: number;
  if (repeated && fix !== "") {
    content = `When ${symptom}, always ${fixClause(fix)} (it failed ${times} times${attempt === "" ? "" : ` with ${attempt}`})`;
    confidence = 0.7 + 0.05 * Math.min(3, times - 2) + (confirmed ? 0.05 : 0);
  } else if (repeated) {
    content =
      attempt !== ""
        ? `Avoid ${attempt} when ${symptom}: it failed ${times} times`
        : `Never retry ${step === "" ? "the same approach" : `step ${step}`} unchanged when ${symptom}: it failed ${times} times`;
    confidence = 0.55 + 0.05 * Math.min(3, times - 2);
  } else if (fix !== "") {
    content = `When ${symptom}, ${fixClause(fix)}${attempt === "" ? "" : ` (instead of ${attempt})`}`;
    confidence = 0.5 + (confirmed ? 0.1 : 0) + 0.05 * Math.min(4, ids.length - 1);
  } else if (confirmed) {
    // It succeeded later and nothing says what changed: a retry is what the evidence supports.
    content = `When ${symptom}, retry ${step === "" ? "it" : `step ${step}`}: it succeeded on a later attempt`;
    confidence = 0.4 + 0.05 * Math.min(3, ids.length - 2);
  } else {
    content =
      attempt !== ""
        ? `When ${symptom}, avoid ${attempt}: it failed and no fix was found`
        : `When ${symptom}, do not retry the same approach unchanged: no fix was found${step === "" ? "" : ` in step ${step}`}`;
    confidence = 0.35 + 0.05 * Math.min(3, ids.length - 1);
  }
  const failedIds = [...new Set(signals.map((s) => s.item.id))];
  const fixIds = [...new Set(chains.flatMap((c) => c.fixIds))];
  const confirmations = chains.flatMap((c) => (c.confirmedBy === undefined ? [] : [c.confirmedBy.id]));
  const rationale = [
    `Failed in ${idList(failedIds)}${repeated ? ` (${times} times)` : ""}`,
    fix !== "" ? `fix seen in ${idList(fixIds.length > 0 ? fixIds : confirmations)}` : confirmed ? "no fix was described" : "no fix was seen",
    confirmations.length > 0 ? `confirmed by the success of ${idList(confirmations)}` : "",
  ].filter((part) => part !== "");
  return {
    content: asSentence(clip(content, 400)),
    lessonType: repeated ? "rule" : "failure",
    importance: withImportance(repeated ? "high" : "medium", texts),
    conditions: [`when ${symptom}`, step === "" ? "" : `in step ${step}`].filter((c) => c !== ""),
    rationale: `${rationale.join("; ")}.`,
    confidence: roundConfidence(Math.min(repeated ? 0.95 : 0.9, confidence)),
    sourceIds: ids,
    index: symptomSignal.index,
  };
}

/** What was tried and failed, as "using the default registry"; "" when it is not told apart from the symptom. */
function attemptFor(signals: readonly Signal[], chains: readonly Chain[], symptom: string, fix: string): string {
  const candidates = [
    ...signals.map((s) => attemptOf(s.text)),
    ...signals.filter((s) => s.fromOutcome && !s.hard && !hasError(s.text)).map((s) => s.text),
    ...chains.flatMap((c) => c.attempts),
  ];
  const told = new Set([...keyTerms(symptom), ...keyTerms(fix)]);
  for (const candidate of candidates) {
    const terms = keyTerms(candidate);
    if (terms.size === 0 || [...terms].every((t) => told.has(t))) continue;
    return clip(attemptPhrase(candidate), 120);
  }
  return "";
}
