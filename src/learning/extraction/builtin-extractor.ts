// The built-in lesson extractor: reads a run's evidence in order, with no model, and proposes the lessons a later run
// can act on: failures and their fixes, the caller's directive hints, stated rules and preferences, what succeeded.
//
// Deterministic (same evidence, same output) and linear in the evidence: every per-item step is bounded (characters,
// sentences, open failure chains; see reading-limits.ts), and the few pairwise comparisons run over capped lists.
import { sentences, terms } from "../../retrieval/text.js";
import { isFailedOutcome, type CandidateLesson, type EvidenceItem, type Extraction, type LessonExtractor } from "../evidence.js";
import { FailureChains } from "./failure-chains.js";
import { failureDraft } from "./failure-lessons.js";
import { fixParts } from "./fix-parts.js";
import { candidateOf, dedupeLessons, extractionOf, summaryOf, type Draft } from "./lesson-drafts.js";
import { hasError, hasFix, hasReason, isPreference, isRule, mayTeach } from "./lesson-text.js";
import { hasHardError } from "../../retrieval/error-words.js";
import { clip, collapse, lowerFirst, statementBody } from "./phrasing.js";
import { LIMITS } from "./reading-limits.js";
import { DirectiveHints, Statements } from "./stated-lessons.js";
import { Successes } from "./success-lessons.js";
import { keyTerms } from "./term-sets.js";

/** How much of the run's opening item (its task, as agents usually write it first) a lesson keeps as its situation. */
const SITUATION_CHARS = 200;

export class BuiltinExtractor implements LessonExtractor {
  extract(evidence: readonly EvidenceItem[], _signal?: AbortSignal): Promise<Extraction> {
    return Promise.resolve(extractLessons(evidence));
  }
}

/** The built-in extraction, synchronous. */
export function extractLessons(evidence: readonly EvidenceItem[]): Extraction {
  if (evidence.length === 0) return extractionOf([], "");
  const reader = new EvidenceReader();
  const first = Math.max(0, evidence.length - LIMITS.items);
  evidence.slice(first).forEach((item, offset) => {
    const read = withoutRoleLabel(item);
    if (read !== undefined) reader.read(read, first + offset);
  });
  const situation = situationOf(evidence);
  const lessons = dedupeLessons(reader.drafts(), reader.order)
    .slice(0, LIMITS.lessons)
    .map(candidateOf)
    // A lesson drawn from the opening entry itself already says what it says.
    .map((lesson) => (situation === undefined || lesson.sourceIds.includes(situation.id) ? lesson : withSituation(lesson, situation)));
  return extractionOf(lessons, summaryOf(lessons, evidence.length));
}

/**
 * A lesson with the situation it was learned in as conditions: the whole task (`while …`) and, when the lesson itself
 * speaks of some of the task's words (the "40 GB" of "upload the 40 GB dump" that the failure also names), those
 * words (`about …`): what set this task apart from others of its kind, and what a later task must share.
 */
function withSituation(lesson: CandidateLesson, situation: Situation): CandidateLesson {
  const spoken = new Set(terms([lesson.content, lesson.rationale, ...lesson.conditions].join("\n")));
  const shared = situation.words.filter((word) => terms(word).some((term) => spoken.has(term)));
  const about = shared.length === 0 ? [] : [`about ${[...new Set(shared)].join(" ")}`];
  return { ...lesson, conditions: [...lesson.conditions, situation.condition, ...about] };
}

/** Role labels agents put before what they log ("action: …", "observation: …"); the words after them are the evidence. */
const ROLE_LABEL = /^\s*(action|observation|thought|note|result|tool_call|tool|assistant|agent|user|summary|plan|task|goal)\s*:\s*/i;
/** Labels of restatements (a plan ahead, a summary after): they repeat what other items say, failures included. */
const RESTATEMENTS = new Set(["summary", "plan"]);

/**
 * An item with its role label taken off; undefined for restatements, which would count a failure twice. What an
 * agent logs as its action is read as a fix it applied: confirmed by a later success, or recorded as an attempt
 * that did not hold when the failure comes back.
 */
function withoutRoleLabel(item: EvidenceItem): EvidenceItem | undefined {
  const label = ROLE_LABEL.exec(item.content);
  if (label === null) return item;
  const role = (label[1] as string).toLowerCase();
  if (RESTATEMENTS.has(role)) return undefined;
  const body = item.content.slice(label[0].length);
  return { ...item, content: role === "action" && !hasError(body) ? `Fixed it by ${body}` : body };
}

/**
 * The situation the run's lessons were learned in: its opening entry (the task an agent states first), as a
 * `while …` condition. Later runs facing a similar task find the lessons by it.
 */
interface Situation {
  readonly id: string;
  readonly condition: string;
  /** The situation's words, as written. */
  readonly words: readonly string[];
}

function situationOf(evidence: readonly EvidenceItem[]): Situation | undefined {
  const opening = evidence.find((item) => item.kind === "trace" || item.kind === "fact" || item.kind === "working_memory");
  if (opening === undefined) return undefined;
  const text = clip(collapse(opening.content).replace(/^(?:task|goal|objective)\s*:\s*/i, ""), SITUATION_CHARS);
  return text === "" ? undefined : { id: opening.id, condition: `while ${text}`, words: text.match(/[\p{L}\p{N}][\p{L}\p{N}_-]*/gu) ?? [] };
}

function isSucceeded(item: EvidenceItem): boolean {
  return item.outcome === "success" || (item.outcome === "" && item.signal > 0);
}

function isOutcome(item: EvidenceItem): boolean {
  return item.kind === "step_outcome" || item.kind === "run_outcome";
}

/** Reads each item once, in order, and hands what it says to the collection that keeps that kind of lesson. */
class EvidenceReader {
  /** Evidence position of every id read: lineage is listed in the order things happened. */
  readonly order = new Map<string, number>();
  readonly #failures = new FailureChains();
  readonly #statements = new Statements();
  readonly #hints = new DirectiveHints();
  readonly #successes = new Successes();

  read(item: EvidenceItem, index: number): void {
    if (!this.order.has(item.id)) this.order.set(item.id, index);
    // Stored lessons and rules are what earlier reflection taught; re-proposing them would only echo them.
    if (item.kind === "lesson" || item.kind === "rule") return;
    if (isOutcome(item)) this.#readOutcome(item, index);
    this.#readText(item, index, isOutcome(item));
  }

  drafts(): Draft[] {
    const failures = this.#failures.sameFailures().flatMap((chains) => failureDraft(chains) ?? []);
    return [...this.#hints.drafts(), ...failures, ...this.#statements.drafts(), ...this.#successes.drafts()];
  }

  #readText(item: EvidenceItem, index: number, statementsOnly: boolean): void {
    const content = item.content.length > LIMITS.itemChars ? item.content.slice(0, LIMITS.itemChars) : item.content;
    if (!mayTeach(content)) return;
    let errors = 0;
    for (const raw of sentences(content).slice(0, LIMITS.sentencesPerItem)) {
      const sentence = raw.length > LIMITS.sentenceChars ? raw.slice(0, LIMITS.sentenceChars) : raw;
      if (isPreference(sentence)) this.#statements.add("preference", sentence, item, index);
      else if (isRule(sentence)) this.#statements.add("rule", sentence, item, index);
      else if (statementsOnly) continue;
      else if (hasFix(sentence)) this.#readFix(sentence, item, index);
      else if (errors < LIMITS.errorsPerItem && hasError(sentence)) {
        errors++;
        this.#failures.fail({ index, item, text: sentence, terms: keyTerms(sentence), fromOutcome: false, hard: hasHardError(sentence) });
      }
    }
  }

  #readOutcome(item: EvidenceItem, index: number): void {
    const failed = isFailedOutcome(item);
    if (item.directiveHint.trim() !== "") this.#hints.add(item, index, failed);
    if (failed) {
      const rationale = clip(collapse(item.content), LIMITS.sentenceChars);
      // "The run failed" with nothing else teaches nothing; a step's name at least says where.
      if (rationale === "" && item.stepName === "") return;
      const text = rationale !== "" ? rationale : `step ${item.stepName} failed`;
      this.#failures.fail({ index, item, text, terms: keyTerms(text), fromOutcome: true, hard: hasHardError(text) });
    } else if (isSucceeded(item)) {
      if (!this.#failures.succeed(item, index)) this.#successes.outcome(item, index);
    }
  }

  #readFix(sentence: string, item: EvidenceItem, index: number): void {
    const parts = fixParts(sentence);
    const terms = keyTerms(sentence);
    // A fix sentence we cannot take apart is still the best account of the fix: keep it whole.
    const fix = parts.fix !== "" ? parts.fix : terms.size >= 2 ? clip(statementBody(sentence), 200) : "";
    // A fix that names its own symptom, or gives its own reason, is not assumed to fix whatever failed just before.
    const byProximity = parts.symptom === "" && !hasReason(sentence);
    if (this.#failures.fix(item, index, terms, byProximity, fix)) return;
    if (parts.symptom !== "") {
      // "The timeout was fixed by raising the limit": the failure and its fix in one sentence.
      // The symptom is a noun phrase here ("the 503"): "you hit" lets it follow "When …".
      const text = `you hit ${lowerFirst(parts.symptom)}`;
      this.#failures.failFixed({ index, item, text, terms: keyTerms(parts.symptom), fromOutcome: false, hard: hasHardError(parts.symptom) }, parts.fix);
    } else if (parts.fix !== "" && hasReason(sentence)) {
      this.#successes.reasonedFix(sentence, item, index);
    }
  }
}
