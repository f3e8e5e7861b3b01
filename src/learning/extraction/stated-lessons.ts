// Lessons the evidence states outright: rules and preferences written in it, and the directive hints the caller gave
// with step outcomes. Each is kept once however often it is repeated; repetition adds lineage and confidence.
import type { LessonType } from "../../storage/entry-record.js";
import type { EvidenceItem } from "../evidence.js";
import { conditionOf, symptomOf } from "./lesson-text.js";
import { idList, roundConfidence, withImportance, type Draft } from "./lesson-drafts.js";
import { asSentence, clip, collapse, statementBody } from "./phrasing.js";
import { LIMITS, pushUnique } from "./reading-limits.js";
import { identityTerms } from "./term-sets.js";

/** Characters of a directive hint a lesson keeps. */
const HINT_CHARS = 500;

interface Statement {
  readonly type: LessonType;
  readonly text: string;
  readonly ids: string[];
  readonly index: number;
  readonly conditions: string[];
}

/** Rules and preferences stated in the evidence, one per distinct wording up to stemming and word order. */
export class Statements {
  readonly #statements = new Map<string, Statement>();
  readonly #counts = new Map<LessonType, number>();
  readonly #keys = new Map<string, string>();

  add(type: LessonType, sentence: string, item: EvidenceItem, index: number): void {
    const text = statementBody(sentence);
    // Agents repeat themselves word for word: remember each wording's key rather than stem it again.
    const wording = `${type}:${text.toLowerCase()}`;
    const key = this.#keys.get(wording) ?? `${type}:${[...identityTerms(text)].sort().join(" ")}`;
    if (this.#keys.size < LIMITS.items) this.#keys.set(wording, key);
    const known = this.#statements.get(key);
    if (known !== undefined) {
      pushUnique(known.ids, item.id);
      return;
    }
    const count = this.#counts.get(type) ?? 0;
    if (count >= LIMITS.statementsPerType || text.length < 8) return;
    this.#counts.set(type, count + 1);
    const conditions = [conditionOf(text), item.stepName === "" ? "" : `in step ${item.stepName}`].filter((c) => c !== "");
    this.#statements.set(key, { type, text: clip(text, LIMITS.sentenceChars), ids: [item.id], index, conditions });
  }

  drafts(): Draft[] {
    return [...this.#statements.values()].map((statement) => ({
      content: asSentence(statement.text),
      lessonType: statement.type,
      importance: withImportance(statement.type === "rule" ? "high" : "medium", [statement.text]),
      conditions: statement.conditions,
      rationale: `Stated in ${idList(statement.ids)}.`,
      confidence: roundConfidence(Math.min(0.9, 0.6 + 0.1 * (statement.ids.length - 1))),
      sourceIds: statement.ids,
      index: statement.index,
    }));
  }
}

interface Hint {
  readonly text: string;
  readonly ids: string[];
  readonly index: number;
  readonly conditions: string[];
  readonly outcomes: string[];
  failed: boolean;
}

/** The caller's directive hints, kept verbatim: hindsight guidance it chose to give later runs. */
export class DirectiveHints {
  readonly #hints = new Map<string, Hint>();

  /** Reads the hint of an outcome; `failed` says whether that outcome was a failure. */
  add(item: EvidenceItem, index: number, failed: boolean): void {
    const text = clip(collapse(item.directiveHint), HINT_CHARS);
    const key = text.toLowerCase();
    const known = this.#hints.get(key);
    const hint = known ?? { text, ids: [], index, conditions: [], outcomes: [], failed: false };
    if (known === undefined) {
      if (this.#hints.size >= LIMITS.statementsPerType) return;
      this.#hints.set(key, hint);
    }
    hint.failed ||= failed;
    pushUnique(hint.ids, item.id);
    if (item.stepName !== "") pushUnique(hint.conditions, `in step ${item.stepName}`);
    const rationale = collapse(item.content);
    if (failed && rationale !== "") pushUnique(hint.conditions, `when ${symptomOf(rationale)}`);
    if (hint.outcomes.length < LIMITS.ids) hint.outcomes.push(`${item.id} (${item.stepName === "" ? "" : `step ${item.stepName}, `}${item.outcome || "no outcome"})`);
  }

  drafts(): Draft[] {
    return [...this.#hints.values()].map((hint) => ({
      content: hint.text,
      lessonType: hint.failed ? "failure" : "success",
      importance: withImportance(hint.failed ? "high" : "medium", [hint.text, ...hint.conditions]),
      conditions: hint.conditions.slice(0, 4),
      rationale: `Directive hint given with ${idList(hint.outcomes)}.`,
      confidence: roundConfidence(Math.min(0.95, 0.8 + 0.05 * (hint.ids.length - 1))),
      sourceIds: hint.ids,
      index: hint.index,
    }));
  }
}
