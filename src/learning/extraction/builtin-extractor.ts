// The built-in lesson extractor: reads a run's evidence in order, with no model, and proposes the lessons a later run
// can act on: failures and their fixes, the caller's directive hints, stated rules and preferences, what succeeded.
//
// Deterministic (same evidence, same output) and linear in the evidence: every per-item step is bounded (characters,
// sentences, open failure chains), and the few pairwise comparisons run over capped lists.
import { sentences } from "../../retrieval/text.js";
import type { Importance, LessonType } from "../../storage/entry-record.js";
import type { EvidenceItem, Extraction, LessonExtractor } from "../evidence.js";
import {
  actionOf,
  approachClause,
  asSentence,
  attemptOf,
  attemptPhrase,
  candidateOf,
  clip,
  collapse,
  conditionOf,
  dedupeLessons,
  extractionOf,
  fixClause,
  fixParts,
  hasError,
  hasFix,
  hasHardError,
  hasReason,
  identityTerms,
  isCritical,
  isPreference,
  isRule,
  jaccard,
  keyTerms,
  lowerFirst,
  mayTeach,
  overlaps,
  reasonedSentence,
  roundConfidence,
  statementBody,
  summaryOf,
  symptomOf,
  type Draft,
} from "./lesson-text.js";

const LIMITS = {
  /** The most recent items read; a longer run's earlier items are not. */
  items: 3000,
  itemChars: 1500,
  sentencesPerItem: 12,
  sentenceChars: 400,
  /** Error sentences of one item that become failure signals. */
  errorsPerItem: 2,
  /** Failure chains that can still be joined, fixed or confirmed; and all chains of a run. */
  openChains: 12,
  chains: 64,
  signalsPerChain: 16,
  /** A chain stays open for this many items after its last failure or fix. */
  chainWindow: 25,
  /** A fix sentence with nothing else tying it to a chain fixes one this close. */
  fixWindow: 3,
  statementsPerType: 30,
  /** Lineage ids kept per chain, statement or hint. */
  ids: 32,
  successes: 30,
  lessons: 20,
} as const;

/** Similarity of two failures' distinctive terms that makes them the same failure. */
const SAME_FAILURE = 0.5;
/** Similarity that lets a failure join an open chain, or the same step's failures group. */
const RELATED_FAILURE = 0.3;

interface Signal {
  readonly index: number;
  readonly item: EvidenceItem;
  readonly text: string;
  readonly terms: ReadonlySet<string>;
  readonly fromOutcome: boolean;
  /** Carries real error vocabulary, not only "did not work". */
  readonly hard: boolean;
}

/** One failure as it unfolds: its signals, the fix reported for it, the success that confirmed it. */
interface Chain {
  readonly failures: Signal[];
  readonly terms: Set<string>;
  readonly stepIds: Set<string>;
  readonly stepNames: Set<string>;
  readonly ids: string[];
  readonly fixIds: string[];
  /** Fixes reported and then seen failing again: what not to do. */
  readonly attempts: string[];
  lastIndex: number;
  fix: string;
  confirmedBy: EvidenceItem | undefined;
  hinted: boolean;
}

interface Statement {
  readonly type: LessonType;
  readonly text: string;
  readonly ids: string[];
  readonly index: number;
  readonly conditions: string[];
}

interface Hint {
  readonly text: string;
  readonly ids: string[];
  readonly index: number;
  readonly conditions: string[];
  readonly outcomes: string[];
  failed: boolean;
}

/** A success that says only that something finished ("install completed") teaches nothing a later run could use. */
const TRIVIAL_SUCCESS = /^\s*[\w-]+(?:\s+[\w-]+){0,2}\s+(?:completed|succeeded|done|finished|ok|passed|worked)\.?\s*$/i;
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
    .map((lesson) => (situation === undefined || lesson.sourceIds.includes(situation.id) ? lesson : { ...lesson, conditions: [...lesson.conditions, situation.condition] }));
  return extractionOf(lessons, summaryOf(lessons, evidence.length));
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
function situationOf(evidence: readonly EvidenceItem[]): { id: string; condition: string } | undefined {
  const opening = evidence.find((item) => item.kind === "trace" || item.kind === "fact" || item.kind === "working_memory");
  if (opening === undefined) return undefined;
  const text = collapse(opening.content).replace(/^(?:task|goal|objective)\s*:\s*/i, "");
  return text === "" ? undefined : { id: opening.id, condition: `while ${clip(text, SITUATION_CHARS)}` };
}

function hasStep(item: EvidenceItem): boolean {
  return item.stepId !== "" || item.stepName !== "";
}

function chainHasStep(chain: Chain): boolean {
  return chain.stepIds.size > 0 || chain.stepNames.size > 0;
}

function sameStep(item: EvidenceItem, chain: Chain): boolean {
  return (item.stepId !== "" && chain.stepIds.has(item.stepId)) || (item.stepName !== "" && chain.stepNames.has(item.stepName.toLowerCase()));
}

function isFailed(item: EvidenceItem): boolean {
  return item.outcome === "failure" || (item.outcome !== "success" && item.signal < 0);
}

function isSucceeded(item: EvidenceItem): boolean {
  return item.outcome === "success" || (item.outcome === "" && item.signal > 0);
}

function isOutcome(item: EvidenceItem): boolean {
  return item.kind === "step_outcome" || item.kind === "run_outcome";
}

/** "so_1, ent_2 and 3 more". */
function idList(ids: readonly string[]): string {
  const shown = ids.slice(0, 5).join(", ");
  return ids.length > 5 ? `${shown} and ${ids.length - 5} more` : shown;
}

function withImportance(base: Importance, texts: readonly string[]): Importance {
  return texts.some(isCritical) ? "critical" : base;
}

/** Appends a value not yet in a list, up to LIMITS.ids values. */
function pushUnique(list: string[], value: string): void {
  if (list.length < LIMITS.ids && !list.includes(value)) list.push(value);
}

class EvidenceReader {
  /** Evidence position of every id read: lineage is listed in the order things happened. */
  readonly order = new Map<string, number>();
  readonly #chains: Chain[] = [];
  #open: Chain[] = [];
  readonly #statements = new Map<string, Statement>();
  readonly #statementCounts = new Map<LessonType, number>();
  readonly #statementKeys = new Map<string, string>();
  readonly #hints = new Map<string, Hint>();
  readonly #successes: Draft[] = [];

  read(item: EvidenceItem, index: number): void {
    if (!this.order.has(item.id)) this.order.set(item.id, index);
    // Stored lessons and rules are what earlier reflection taught; re-proposing them would only echo them.
    if (item.kind === "lesson" || item.kind === "rule") return;
    if (isOutcome(item)) this.#readOutcome(item, index);
    this.#readText(item, index, isOutcome(item));
  }

  #readText(item: EvidenceItem, index: number, statementsOnly: boolean): void {
    const content = item.content.length > LIMITS.itemChars ? item.content.slice(0, LIMITS.itemChars) : item.content;
    if (!mayTeach(content)) return;
    let errors = 0;
    for (const raw of sentences(content).slice(0, LIMITS.sentencesPerItem)) {
      const sentence = raw.length > LIMITS.sentenceChars ? raw.slice(0, LIMITS.sentenceChars) : raw;
      if (isPreference(sentence)) this.#statement("preference", sentence, item, index);
      else if (isRule(sentence)) this.#statement("rule", sentence, item, index);
      else if (statementsOnly) continue;
      else if (hasFix(sentence)) this.#readFix(sentence, item, index);
      else if (errors < LIMITS.errorsPerItem && hasError(sentence)) {
        errors++;
        this.#failure({ index, item, text: sentence, terms: keyTerms(sentence), fromOutcome: false, hard: hasHardError(sentence) });
      }
    }
  }

  #readOutcome(item: EvidenceItem, index: number): void {
    const failed = isFailed(item);
    if (item.directiveHint.trim() !== "") this.#hint(item, index, failed);
    if (failed) {
      const rationale = clip(collapse(item.content), LIMITS.sentenceChars);
      // "The run failed" with nothing else teaches nothing; a step's name at least says where.
      if (rationale === "" && item.stepName === "") return;
      const text = rationale !== "" ? rationale : `step ${item.stepName} failed`;
      const chain = this.#failure({ index, item, text, terms: keyTerms(text), fromOutcome: true, hard: hasHardError(text) });
      if (chain !== undefined && item.directiveHint.trim() !== "") chain.hinted = true;
    } else if (isSucceeded(item)) {
      this.#success(item, index);
    }
  }

  #statement(type: LessonType, sentence: string, item: EvidenceItem, index: number): void {
    const text = statementBody(sentence);
    // Agents repeat themselves word for word: remember each wording's key rather than stem it again.
    const wording = `${type}:${text.toLowerCase()}`;
    const key = this.#statementKeys.get(wording) ?? `${type}:${[...identityTerms(text)].sort().join(" ")}`;
    if (this.#statementKeys.size < LIMITS.items) this.#statementKeys.set(wording, key);
    const known = this.#statements.get(key);
    if (known !== undefined) {
      pushUnique(known.ids, item.id);
      return;
    }
    const count = this.#statementCounts.get(type) ?? 0;
    if (count >= LIMITS.statementsPerType || text.length < 8) return;
    this.#statementCounts.set(type, count + 1);
    const conditions = [conditionOf(text), item.stepName === "" ? "" : `in step ${item.stepName}`].filter((c) => c !== "");
    this.#statements.set(key, { type, text: clip(text, LIMITS.sentenceChars), ids: [item.id], index, conditions });
  }

  #hint(item: EvidenceItem, index: number, failed: boolean): void {
    const text = clip(collapse(item.directiveHint), 500);
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

  /** Adds a failure to the open chain it continues, or starts one; returns that chain. */
  #failure(signal: Signal): Chain | undefined {
    this.#prune(signal.index);
    const chain = this.#chainFor(signal);
    if (chain !== undefined) {
      // A step's failed outcome, recorded after the traces that showed the failure, reports that failure again.
      const reported = signal.fromOutcome && signal.item.stepId !== "" && chain.failures.some((f) => !f.fromOutcome && f.item.stepId === signal.item.stepId);
      if (!reported && (chain.fix !== "" || chain.fixIds.length > 0)) {
        // It failed again after a fix was reported: the fix did not hold.
        if (chain.fix !== "" && chain.attempts.length < LIMITS.signalsPerChain) chain.attempts.push(chain.fix);
        chain.fix = "";
        chain.fixIds.length = 0;
      }
      if (chain.failures.length < LIMITS.signalsPerChain) chain.failures.push(signal);
      for (const term of signal.terms) if (chain.terms.size < 64) chain.terms.add(term);
      this.#addStep(chain, signal.item);
      pushUnique(chain.ids, signal.item.id);
      chain.lastIndex = signal.index;
      return chain;
    }
    if (this.#chains.length >= LIMITS.chains) return undefined;
    const created: Chain = {
      failures: [signal],
      terms: new Set(signal.terms),
      stepIds: new Set(),
      stepNames: new Set(),
      ids: [signal.item.id],
      fixIds: [],
      attempts: [],
      lastIndex: signal.index,
      fix: "",
      confirmedBy: undefined,
      hinted: false,
    };
    this.#addStep(created, signal.item);
    this.#chains.push(created);
    this.#open.push(created);
    if (this.#open.length > LIMITS.openChains) this.#open.shift();
    return created;
  }

  #addStep(chain: Chain, item: EvidenceItem): void {
    if (item.stepId !== "") chain.stepIds.add(item.stepId);
    if (item.stepName !== "") chain.stepNames.add(item.stepName.toLowerCase());
  }

  #prune(index: number): void {
    this.#open = this.#open.filter((chain) => chain.confirmedBy === undefined && index - chain.lastIndex <= LIMITS.chainWindow);
  }

  #chainFor(signal: Signal): Chain | undefined {
    for (let k = this.#open.length - 1; k >= 0; k--) {
      const chain = this.#open[k];
      if (chain === undefined) continue;
      if (sameStep(signal.item, chain)) return chain;
      if (hasStep(signal.item) && chainHasStep(chain)) continue;
      if (jaccard(signal.terms, chain.terms) >= RELATED_FAILURE) return chain;
      // Next to each other: a trace and then the failed outcome of its step, or consecutive traces, are one failure.
      // A trace with no step after a step's failure is not assumed to be about that step, and a failure sharing no
      // words with a chain that was already fixed is a new failure, not the fix failing.
      const fixed = chain.fix !== "" || chain.fixIds.length > 0;
      if (signal.index - chain.lastIndex <= 1 && !chainHasStep(chain) && !fixed) return chain;
      // "Retrying did not help" carries no error of its own: it is about the failure just before it.
      if (!signal.hard && !signal.fromOutcome && signal.index - chain.lastIndex <= LIMITS.fixWindow) return chain;
    }
    return undefined;
  }

  #readFix(sentence: string, item: EvidenceItem, index: number): void {
    this.#prune(index);
    const parts = fixParts(sentence);
    const terms = keyTerms(sentence);
    // A fix that names its own symptom, or gives its own reason, is not assumed to fix whatever failed just before.
    const chain = this.#chainForFix(item, index, terms, parts.symptom === "" && !hasReason(sentence));
    if (chain !== undefined) {
      // A fix sentence we cannot take apart is still the best account of the fix: keep it whole.
      if (chain.fix === "") chain.fix = parts.fix !== "" ? parts.fix : keyTerms(sentence).size >= 2 ? clip(statementBody(sentence), 200) : "";
      pushUnique(chain.fixIds, item.id);
      pushUnique(chain.ids, item.id);
      chain.lastIndex = index;
      return;
    }
    if (parts.symptom !== "") {
      // "The timeout was fixed by raising the limit": the failure and its fix in one sentence.
      // The symptom is a noun phrase here ("the 503"): "you hit" lets it follow "When …".
      const text = `you hit ${lowerFirst(parts.symptom)}`;
      const created = this.#failure({ index, item, text, terms: keyTerms(parts.symptom), fromOutcome: false, hard: hasHardError(parts.symptom) });
      if (created !== undefined) {
        created.fix = parts.fix;
        created.fixIds.push(item.id);
      }
    } else if (parts.fix !== "" && hasReason(sentence) && this.#successes.length < LIMITS.successes) {
      this.#successes.push(this.#successDraft(statementBody(sentence), [item.id], index, [conditionOf(sentence)], `Reported in ${item.id}.`, 0.45));
    }
  }

  #chainForFix(item: EvidenceItem, index: number, terms: ReadonlySet<string>, byProximity: boolean): Chain | undefined {
    for (let k = this.#open.length - 1; k >= 0; k--) {
      const chain = this.#open[k];
      if (chain === undefined) continue;
      if (sameStep(item, chain) || overlaps(terms, chain.terms)) return chain;
      // Right after the failure (a thought between them at most), a fix belongs to it even when the agent logged the
      // retry as a new step.
      const gap = index - chain.lastIndex;
      if (byProximity && gap <= LIMITS.fixWindow && (gap <= 2 || !(hasStep(item) && chainHasStep(chain)))) return chain;
    }
    return undefined;
  }

  #success(item: EvidenceItem, index: number): void {
    this.#prune(index);
    let confirmed = false;
    for (const chain of this.#open) {
      if (!sameStep(item, chain)) continue;
      this.#confirm(chain, item);
      confirmed = true;
    }
    const last = this.#open[this.#open.length - 1];
    if (!confirmed && last !== undefined && last.confirmedBy === undefined) {
      const gap = index - last.lastIndex;
      if (gap === 1 || (!chainHasStep(last) && gap <= 2)) {
        this.#confirm(last, item);
        confirmed = true;
      }
    }
    if (confirmed) return;
    if (this.#successes.length >= LIMITS.successes || TRIVIAL_SUCCESS.test(item.content)) return;
    const action = actionOf(item.content);
    const reasoned = action === "" ? reasonedSentence(item.content) : "";
    if (action === "" && reasoned === "") return;
    const step = item.stepName === "" ? "" : `For step ${item.stepName}, `;
    const approach = action !== "" ? approachClause(action) : step === "" ? reasoned : lowerFirst(reasoned);
    const conditions = [item.stepName === "" ? "" : `in step ${item.stepName}`, conditionOf(item.content)];
    const what = `${item.kind === "run_outcome" ? "The run" : `Step ${item.stepName || item.stepId || "outcome"}`} succeeded (${item.id})`;
    const confidence = 0.5 + (item.signal >= 0.8 ? 0.1 : 0);
    this.#successes.push(this.#successDraft(`${step}${approach}`, [item.id], index, conditions, `${what}: ${clip(collapse(item.content), 160)}`, confidence));
  }

  #confirm(chain: Chain, item: EvidenceItem): void {
    chain.confirmedBy = item;
    pushUnique(chain.ids, item.id);
    if (chain.fix === "") chain.fix = actionOf(item.content);
  }

  #successDraft(content: string, ids: string[], index: number, conditions: string[], rationale: string, confidence: number): Draft {
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

  drafts(): Draft[] {
    return [...this.#hintDrafts(), ...this.#failureDrafts(), ...this.#statementDrafts(), ...this.#successes];
  }

  #hintDrafts(): Draft[] {
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

  #statementDrafts(): Draft[] {
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

  /** Chains describing the same failure (similar wording, or the same step) become one lesson. */
  #failureDrafts(): Draft[] {
    const groups: { terms: Set<string>; chains: Chain[] }[] = [];
    for (const chain of this.#chains) {
      const symptom = chain.failures.find((s) => s.hard) ?? chain.failures[0];
      const terms = symptom === undefined ? new Set<string>() : new Set(symptom.terms);
      const group = groups.find((g) => {
        const similarity = jaccard(g.terms, terms);
        return similarity >= SAME_FAILURE || (similarity >= RELATED_FAILURE && g.chains.some((c) => chain.failures.some((s) => sameStep(s.item, c))));
      });
      if (group === undefined) groups.push({ terms, chains: [chain] });
      else group.chains.push(chain);
    }
    const drafts: Draft[] = [];
    for (const group of groups) {
      const draft = failureDraft(group.chains);
      if (draft !== undefined) drafts.push(draft);
    }
    return drafts;
  }
}

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

function failureDraft(chains: readonly Chain[]): Draft | undefined {
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
