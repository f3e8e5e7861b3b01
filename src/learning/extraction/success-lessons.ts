// Lessons of what worked on its own, not as the fix of a failure: a success that says how it was reached, and a fix
// that gives its reason with no failure before it. A success that only says something finished teaches nothing.
import type { EvidenceItem } from "../evidence.js";
import { actionOf } from "./fix-parts.js";
import { conditionOf, reasonedSentence } from "./lesson-text.js";
import { roundConfidence, withImportance, type Draft } from "./lesson-drafts.js";
import { asSentence, clip, collapse, lowerFirst, statementBody } from "./phrasing.js";
import { LIMITS } from "./reading-limits.js";
import { approachClause } from "./verb-forms.js";

/** A success that says only that something finished ("install completed") teaches nothing a later run could use. */
const TRIVIAL_SUCCESS = /^\s*[\w-]+(?:\s+[\w-]+){0,2}\s+(?:completed|succeeded|done|finished|ok|passed|worked)\.?\s*$/i;

export class Successes {
  readonly #drafts: Draft[] = [];

  /** A fix sentence that gives its own reason ("Switching to the mirror worked because …") and fixed no failure seen. */
  reasonedFix(sentence: string, item: EvidenceItem, index: number): void {
    if (this.#drafts.length >= LIMITS.successes) return;
    this.#drafts.push(successDraft(statementBody(sentence), [item.id], index, [conditionOf(sentence)], `Reported in ${item.id}.`, 0.45));
  }

  /** A successful outcome that confirmed no failure: a lesson when it says what was done, or why it worked. */
  outcome(item: EvidenceItem, index: number): void {
    if (this.#drafts.length >= LIMITS.successes || TRIVIAL_SUCCESS.test(item.content)) return;
    const action = actionOf(item.content);
    const reasoned = action === "" ? reasonedSentence(item.content) : "";
    if (action === "" && reasoned === "") return;
    const step = item.stepName === "" ? "" : `For step ${item.stepName}, `;
    const approach = action !== "" ? approachClause(action) : step === "" ? reasoned : lowerFirst(reasoned);
    const conditions = [item.stepName === "" ? "" : `in step ${item.stepName}`, conditionOf(item.content)];
    const what = `${item.kind === "run_outcome" ? "The run" : `Step ${item.stepName || item.stepId || "outcome"}`} succeeded (${item.id})`;
    const confidence = 0.5 + (item.signal >= 0.8 ? 0.1 : 0);
    this.#drafts.push(successDraft(`${step}${approach}`, [item.id], index, conditions, `${what}: ${clip(collapse(item.content), 160)}`, confidence));
  }

  drafts(): readonly Draft[] {
    return this.#drafts;
  }
}

function successDraft(content: string, ids: string[], index: number, conditions: string[], rationale: string, confidence: number): Draft {
  return {
    content: asSentence(clip(content, 400)),
    lessonType: "success",
    importance: withImportance("medium", [content]),
    conditions: conditions.filter((c) => c !== ""),
    rationale,
    confidence: roundConfidence(confidence),
    sourceIds: ids,
    index,
  };
}
