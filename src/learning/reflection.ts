// Reflection: a run's evidence (or a caller's lessons) turned into stored lessons. Candidates pass the validation
// gate; what it accepts, merges and quarantines is committed in one transaction, then indexed and announced.
import type { EventBus } from "../events/event-bus.js";
import type { EntryWriter } from "../memory/entry-writer.js";
import type { MemoryIndex } from "../memory/memory-index.js";
import { jaccard, terms, termFrequencies } from "../retrieval/text.js";
import { cosine } from "../retrieval/embedder.js";
import type { Storage } from "../storage/database.js";
import { initialLearning, newEntry, type EntryRecord, type EntryStore, type NewEntry, type PreparedEntry, type Reindex } from "../storage/entry-store.js";
import type { CandidateLesson, EvidenceItem, Extraction, LessonExtractor } from "./evidence.js";
import type { AppliedLearning, LearningChanges } from "./learning-changes.js";
import type { OutcomeStore } from "./outcome-store.js";
import { relearn, unchanged } from "./reinforcement.js";
import { TimeSlicer, chunkedVisibleSeqs } from "../memory/scan.js";
import { DUPLICATE_COSINE, DUPLICATE_TERM_OVERLAP, ValidationGate, type GateDecision, type PreparedCandidate } from "./validation-gate.js";
import { lessonIndexText, withSituations } from "../retrieval/situations.js";
import { candidateSituations } from "./lesson-situations.js";
import { sameFixLessons, type SituationGain } from "./same-fix.js";
import { derivedProvenance, type Trust } from "../storage/provenance.js";
import { evidenceTrust } from "../memory/evidence-trust.js";
import { INSTRUCTION_FLAG } from "../memory/instruction-detector.js";
import { asUntrusted, corroborableByEvidence, lessonTrust } from "./lesson-trust.js";
import { trusted } from "./reinforcement.js";

/** The most recent items of a run reflection reads; older evidence is left out. Extraction stays a few milliseconds. */
export const MAX_EVIDENCE_ITEMS = 1_000;
/** Evidence text beyond this many characters is cut: lessons come from what happened, not from whole artifacts. */
const MAX_EVIDENCE_CHARS = 2_000;
/** Sources a lesson keeps in its lineage. */
const MAX_SOURCE_IDS = 64;

export interface ReflectRequestInput {
  readonly owner: number;
  readonly runId: string;
  /** The owner's runs linked under `runId` whose evidence is read too (`include_linked_runs`); none when absent. */
  readonly linkedRunIds?: readonly string[];
  /** Only evidence after this checkpoint (already resolved to the caller's checkpoint entry). */
  readonly after: EntryRecord | undefined;
  readonly stepId: string;
  /** 0 = all. */
  readonly lastNItems: number;
  readonly includeStepOutcomes: boolean;
  readonly userId: string;
  readonly agentId: string;
  /** Caller-supplied lessons (validated); when non-empty the extractor is skipped. */
  readonly callerLessons: readonly CandidateLesson[];
  readonly signal?: AbortSignal;
  /** Further writes that commit in the reflection's own transaction, all or nothing (a control session's close). */
  readonly alongside?: AlongsideWrites;
}

/** Writes a caller adds to the reflection's transaction: made inside it, then told once it is durable. */
export interface AlongsideWrites<T = unknown> {
  /**
   * Runs inside the write transaction, after the lessons are written; throwing rolls everything back. Changes nothing
   * in memory (the transaction may run it again, only the last run's writes kept): it returns what `committed` needs.
   */
  inTransaction(): T;
  /** Runs after the commit, before `reflection.completed` is published: index and announce what was written. */
  committed(written: T): void;
}

export type DecisionKind = "accepted" | "merged" | "rejected" | "quarantined";

export interface LessonDecisionResult {
  readonly candidate: CandidateLesson;
  readonly decision: DecisionKind;
  readonly reason: string;
  /** The stored lesson (new, merged into, or quarantined); undefined when rejected. */
  readonly lesson: EntryRecord | undefined;
}

export interface Reflection {
  readonly decisions: readonly LessonDecisionResult[];
  readonly summary: string;
  readonly confidence: number;
  readonly degraded: boolean;
  readonly fallbackReason: string;
  readonly evidenceCount: number;
}

export class Reflector {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #outcomes: OutcomeStore;
  readonly #index: MemoryIndex;
  readonly #writer: EntryWriter;
  readonly #changes: LearningChanges;
  readonly #events: EventBus;
  readonly #extractor: LessonExtractor;
  readonly #gate: ValidationGate;
  /** One reflection at a time per owner: the gate compares against what earlier ones stored. Entries leave when done. */
  readonly #running = new Map<number, Promise<unknown>>();

  constructor(deps: {
    storage: Storage;
    entries: EntryStore;
    outcomes: OutcomeStore;
    index: MemoryIndex;
    writer: EntryWriter;
    changes: LearningChanges;
    events: EventBus;
    extractor: LessonExtractor;
  }) {
    this.#storage = deps.storage;
    this.#entries = deps.entries;
    this.#outcomes = deps.outcomes;
    this.#index = deps.index;
    this.#writer = deps.writer;
    this.#changes = deps.changes;
    this.#events = deps.events;
    this.#extractor = deps.extractor;
    this.#gate = new ValidationGate(deps.entries, deps.index.catalog, deps.index.dense);
  }

  async reflect(input: ReflectRequestInput): Promise<Reflection> {
    const previous = this.#running.get(input.owner) ?? Promise.resolve();
    const mine = previous.then(
      () => this.#reflect(input),
      () => this.#reflect(input),
    );
    this.#running.set(input.owner, mine);
    try {
      return await mine;
    } finally {
      if (this.#running.get(input.owner) === mine) this.#running.delete(input.owner);
    }
  }

  async #reflect(input: ReflectRequestInput): Promise<Reflection> {
    let extraction: Extraction;
    let evidenceCount = 0;
    let evidenceById = new Map<string, EvidenceItem>();
    const autoExtracted = input.callerLessons.length === 0;
    if (autoExtracted) {
      const evidence = await this.#evidenceWithLinked(input);
      evidenceCount = evidence.length;
      evidenceById = new Map(evidence.map((item) => [item.id, item]));
      extraction = await this.#extractor.extract(evidence, input.signal);
    } else {
      extraction = { lessons: input.callerLessons, summary: "", confidence: 0, degraded: false, fallbackReason: "" };
    }
    // A lesson is no more trusted than its evidence; the caller's own lessons are its word.
    const trusts: Trust[] = extraction.lessons.map((lesson) => (autoExtracted ? lessonTrust(lesson, evidenceById, extraction.readsAllEvidence === true) : "trusted"));
    const lessons = extraction.lessons.map((lesson, i) => (trusts[i] === "untrusted" ? asUntrusted(lesson) : lesson));
    const candidates = await this.#prepare(lessons, evidenceById);
    const decisions = await this.#decide(candidates, input);
    const stored = await this.#commit(candidates, trusts, decisions, input, autoExtracted);
    return {
      decisions: stored,
      summary: autoExtracted ? extraction.summary : callerSummary(stored),
      confidence: extraction.confidence,
      degraded: extraction.degraded,
      fallbackReason: extraction.fallbackReason,
      evidenceCount,
    };
  }

  /**
   * The run's evidence and, when asked, its linked runs' (the checkpoint narrows the run's only), merged in time order
   * with each run's own order kept; with linked runs, the newest MAX_EVIDENCE_ITEMS (or `lastNItems`) in all.
   */
  async #evidenceWithLinked(input: ReflectRequestInput): Promise<EvidenceItem[]> {
    let merged = await this.evidence(input);
    if (input.linkedRunIds === undefined || input.linkedRunIds.length === 0) return merged;
    for (const runId of input.linkedRunIds ?? []) merged = mergeInTime(merged, await this.evidence({ ...input, runId, after: undefined }));
    const keep = input.lastNItems > 0 ? Math.min(input.lastNItems, MAX_EVIDENCE_ITEMS) : MAX_EVIDENCE_ITEMS;
    return merged.length > keep ? merged.slice(-keep) : merged;
  }

  /** The run's evidence, oldest first, narrowed as the request asks; read in time slices (see memory/scan.ts). */
  async evidence(input: Pick<ReflectRequestInput, "owner" | "runId" | "after" | "stepId" | "lastNItems" | "includeStepOutcomes" | "userId">): Promise<EvidenceItem[]> {
    const slicer = new TimeSlicer();
    const items: EvidenceItem[] = [];
    const afterSeq = input.after?.seq ?? 0;
    const afterTime = input.after?.createdAt ?? 0;
    const userMatches = (userId: string): boolean => input.userId === "" || userId === "" || userId === input.userId;
    let read = 0;
    for (const seq of chunkedVisibleSeqs(this.#entries, input.owner, input.runId, true)) {
      if (seq <= afterSeq || read >= MAX_EVIDENCE_ITEMS) break;
      read++;
      const pause = slicer.tick();
      if (pause) await pause;
      const entry = this.#entries.get(seq);
      if (entry === undefined || entry.entryType === "lesson" || entry.entryType === "rule" || !userMatches(entry.userId)) continue;
      const stepId = stepOf(entry.metadataJson);
      if (input.stepId !== "" && stepId !== input.stepId) continue;
      items.push({
        id: entry.id,
        kind: entry.entryType,
        content: clip(entry.content),
        createdAt: entry.createdAt,
        agentId: entry.agentId,
        stepId,
        stepName: "",
        outcome: "",
        signal: 0,
        directiveHint: "",
        trust: evidenceTrust(entry),
        instructionLike: entry.flags.includes(INSTRUCTION_FLAG),
      });
    }
    // Entries were read newest first: put them in write order.
    items.reverse();
    const outcomes: EvidenceItem[] = [];
    if (input.includeStepOutcomes) {
      for (const step of this.#outcomes.stepOutcomesOfRun(input.owner, input.runId, MAX_EVIDENCE_ITEMS)) {
        if (step.updatedAt < afterTime || (input.stepId !== "" && step.stepId !== input.stepId) || !userMatches(step.userId)) continue;
        outcomes.push({
          id: step.id,
          kind: "step_outcome",
          content: clip(step.rationale),
          createdAt: step.updatedAt,
          agentId: step.agentId,
          stepId: step.stepId,
          stepName: step.stepName,
          outcome: step.outcome,
          signal: step.signal,
          directiveHint: clip(step.directiveHint),
        });
      }
    }
    if (input.stepId === "") {
      for (const outcome of this.#outcomes.outcomesOfRun(input.owner, input.runId, 200)) {
        if (outcome.createdAt < afterTime || !userMatches(outcome.userId)) continue;
        outcomes.push({
          id: outcome.id,
          kind: "run_outcome",
          content: clip(outcome.rationale),
          createdAt: outcome.createdAt,
          agentId: outcome.agentId,
          stepId: "",
          stepName: "",
          outcome: outcome.outcome,
          signal: outcome.signal,
          directiveHint: "",
        });
      }
    }
    const ordered = withOutcomesInPlace(items, outcomes);
    return input.lastNItems > 0 ? ordered.slice(-input.lastNItems) : ordered;
  }

  /** Each candidate with the failure signatures of its evidence, its index terms and its vector. */
  async #prepare(lessons: readonly CandidateLesson[], evidence: ReadonlyMap<string, EvidenceItem>): Promise<PreparedCandidate[]> {
    if (lessons.length === 0) return [];
    const situations = lessons.map((lesson) => candidateSituations(lesson.sourceIds, evidence));
    const texts = lessons.map((lesson, i) => lessonIndexText(lesson.content, { conditions: lesson.conditions, seen: situations[i] as string[] }));
    const vectors = await this.#index.embedder.embed(texts);
    return lessons.map((lesson, i) => ({ lesson, situations: situations[i] as string[], indexText: texts[i] as string, terms: new Set(terms(texts[i] as string)), vector: vectors[i] as Float32Array }));
  }

  /**
   * The lessons of other runs whose fix the run's new lessons apply (see same-fix.ts), each with its postings and
   * vector for the situations it gains; a lesson merged into here is left to the merge.
   */
  async #sameFixGains(
    candidates: readonly PreparedCandidate[],
    trusts: readonly Trust[],
    decisions: readonly (GateDecision | { kind: "batch" })[],
    input: ReflectRequestInput,
  ): Promise<(SituationGain & { reindex: Reindex })[]> {
    const mergedInto = new Set(decisions.flatMap((d) => (d.kind === "merged" ? [d.into.seq] : [])));
    const gains = new Map<number, SituationGain & { reindex: Reindex }>();
    for (const [index, decision] of decisions.entries()) {
      // What untrusted evidence says was fixed widens no lesson's reach.
      if ((decision.kind !== "accepted" && decision.kind !== "merged") || trusts[index] === "untrusted") continue;
      const candidate = candidates[index] as PreparedCandidate;
      const found = await sameFixLessons(this.#index, this.#entries, input.owner, input.runId, { ...candidate.lesson, situations: candidate.situations }, new Set([...mergedInto, ...gains.keys()]));
      for (const gain of found) gains.set(gain.lesson.seq, { ...gain, reindex: await this.#index.reindexOf({ ...gain.lesson, metadataJson: gain.metadataJson }) });
    }
    return [...gains.values()];
  }

  /**
   * What a merge adds to each lesson merged into: the candidate's conditions and failure signatures, with the lesson's
   * postings and vector made again for them (embedded here, before the transaction). Undefined when nothing is new.
   */
  async #mergeGrowth(candidates: readonly PreparedCandidate[], decisions: readonly (GateDecision | { kind: "batch" })[]): Promise<Map<number, { metadataJson: string; reindex: Reindex }>> {
    const growth = new Map<number, { metadataJson: string; reindex: Reindex }>();
    for (const [index, decision] of decisions.entries()) {
      if (decision.kind !== "merged") continue;
      const candidate = candidates[index] as PreparedCandidate;
      const metadataJson = grownMetadata(decision.into.metadataJson, candidate);
      if (metadataJson === undefined) continue;
      growth.set(index, { metadataJson, reindex: await this.#index.reindexOf({ ...decision.into, metadataJson }) });
    }
    return growth;
  }

  /** The gate's decision on each candidate, in order; candidates are judged in time slices (see memory/scan.ts). */
  async #decide(candidates: readonly PreparedCandidate[], input: ReflectRequestInput): Promise<(GateDecision | { kind: "batch"; index: number; reason: string })[]> {
    const slicer = new TimeSlicer();
    const taken: number[] = [];
    const decisions: (GateDecision | { kind: "batch"; index: number; reason: string })[] = [];
    for (const [i, candidate] of candidates.entries()) {
      const pause = slicer.tick();
      if (pause) await pause;
      const earlier = taken.find((j) => sameCandidate(candidates[j] as PreparedCandidate, candidate));
      if (earlier !== undefined) {
        decisions.push({ kind: "batch", index: earlier, reason: `the same as lesson ${earlier} of this reflection` });
        continue;
      }
      const decision = this.#gate.decide(candidate, { owner: input.owner, runId: input.runId, userId: input.userId });
      if (decision.kind === "accepted" || (decision.kind === "quarantined" && decision.into === undefined)) taken.push(i);
      decisions.push(decision);
    }
    return decisions;
  }

  async #commit(
    candidates: readonly PreparedCandidate[],
    trusts: readonly Trust[],
    decisions: readonly (GateDecision | { kind: "batch"; index: number; reason: string })[],
    input: ReflectRequestInput,
    autoExtracted: boolean,
  ): Promise<LessonDecisionResult[]> {
    const growth = await this.#mergeGrowth(candidates, decisions);
    const gains = await this.#sameFixGains(candidates, trusts, decisions, input);
    const now = Date.now();
    const by = { reason: "reflection", agentId: input.agentId };
    const toWrite: { index: number; prepared: PreparedEntry }[] = [];
    decisions.forEach((decision, index) => {
      const candidate = candidates[index] as PreparedCandidate;
      const quarantined = decision.kind === "quarantined" && decision.into === undefined;
      if (decision.kind !== "accepted" && !quarantined) return;
      const entry = lessonEntry(candidate, input, autoExtracted, now, quarantined, trusts[index] ?? "untrusted");
      toWrite.push({ index, prepared: { entry, vector: candidate.vector, termFreqs: termFrequencies(candidate.indexText) } });
    });
    const { written, merged, gained, alongside } = await this.#storage.transaction(() => {
      const written = this.#entries.writeInTransaction(
        toWrite.map((w) => w.prepared),
        now,
      );
      const merged = new Map<number, AppliedLearning | undefined>();
      decisions.forEach((decision, index) => {
        if (decision.kind !== "merged") return;
        const current = this.#entries.get(decision.into.seq);
        if (current === undefined) return;
        const candidate = (candidates[index] as PreparedCandidate).lesson;
        const trust = trusts[index] ?? "untrusted";
        // Learned again from trusted evidence, untrusted knowledge is corroborated — unless it reads as an instruction.
        const corroborated = trust === "trusted" && evidenceTrust(current) === "untrusted" && corroborableByEvidence(current.content);
        const base = corroborated ? { ...current, provenance: trusted(current) } : current;
        const relearned = relearn(base, input.runId, candidate.confidence, decision.newEvidence, trust);
        const learned = corroborated
          ? { ...relearned, provenance: base.provenance, trustReason: `corroborated: learned again from trusted evidence in run ${JSON.stringify(input.runId)} (${candidate.sourceIds.slice(0, 5).join(", ")})` }
          : relearned;
        const sourceIds = [...new Set([...current.sourceIds, ...candidate.sourceIds])].slice(0, MAX_SOURCE_IDS);
        const grown = growth.get(index);
        // Read again here: an outcome may have changed the lesson's situations since the merge was decided.
        const metadataJson = grown === undefined ? undefined : grownMetadata(current.metadataJson, candidates[index] as PreparedCandidate);
        merged.set(index, this.#changes.applyInTransaction(current.seq, learned, by, { sourceIds, metadataJson }, now, metadataJson === undefined ? undefined : grown?.reindex));
      });
      const gained: (AppliedLearning | undefined)[] = [];
      for (const gain of gains) {
        const current = this.#entries.get(gain.lesson.seq);
        if (current === undefined) continue;
        const metadataJson = withSituations(current.metadataJson, "situations", gain.situations);
        if (metadataJson === undefined) continue;
        const audit = [{ at: now, field: "situation", from: "", to: "situations", reason: `run ${JSON.stringify(input.runId)} met a failure and fixed it as this lesson says: its failure is now one of the lesson's situations`, agentId: input.agentId }];
        gained.push(this.#changes.applyInTransaction(current.seq, unchanged(current), by, { metadataJson }, now, gain.reindex, audit));
      }
      return { written, merged, gained, alongside: input.alongside?.inTransaction() };
    });
    this.#writer.committed(
      written,
      toWrite.map((w) => w.prepared),
      "reflect",
    );
    this.#changes.committed([...merged.values(), ...gained], "reflection");
    input.alongside?.committed(alongside);
    const storedAt = new Map<number, EntryRecord>(toWrite.map((w, i) => [w.index, (written[i] as { record: EntryRecord }).record]));
    const results = decisions.map((decision, index): LessonDecisionResult => {
      const candidate = (candidates[index] as PreparedCandidate).lesson;
      switch (decision.kind) {
        case "accepted":
          return { candidate, decision: "accepted", reason: decision.reason, lesson: storedAt.get(index) };
        case "rejected":
          return { candidate, decision: "rejected", reason: decision.reason, lesson: undefined };
        case "merged":
          return { candidate, decision: "merged", reason: decision.reason, lesson: merged.get(index)?.updated.after ?? decision.into };
        case "quarantined":
          return { candidate, decision: "quarantined", reason: decision.reason, lesson: decision.into ?? storedAt.get(index) };
        case "batch":
          return { candidate, decision: "merged", reason: decision.reason, lesson: storedAt.get(decision.index) };
      }
    });
    const count = (kind: DecisionKind): number => results.filter((r) => r.decision === kind).length;
    this.#events.publish({
      type: "reflection.completed",
      owner: input.owner,
      runId: input.runId,
      agentId: input.agentId,
      payload: JSON.stringify({
        lessons_created: storedAt.size,
        accepted: count("accepted"),
        merged: count("merged"),
        rejected: count("rejected"),
        quarantined: count("quarantined"),
        auto_extracted: autoExtracted,
      }),
    });
    return results;
  }
}

/**
 * Entries (in write order) and outcomes as one story: a step's outcome right after the last entry of that step —
 * agents often record outcomes after the fact, and the extractor reads a failure, its fix and its success in the
 * order they happened — and any other outcome at its time.
 */
/** Two runs' evidence as one list in time order, each list's own order kept (outcomes stay after their step). */
function mergeInTime(a: readonly EvidenceItem[], b: readonly EvidenceItem[]): EvidenceItem[] {
  const out: EvidenceItem[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push((b[j] as EvidenceItem).createdAt < (a[i] as EvidenceItem).createdAt ? (b[j++] as EvidenceItem) : (a[i++] as EvidenceItem));
  return [...out, ...a.slice(i), ...b.slice(j)];
}

function withOutcomesInPlace(entries: readonly EvidenceItem[], outcomes: readonly EvidenceItem[]): EvidenceItem[] {
  const lastOfStep = new Map<string, number>();
  entries.forEach((item, i) => {
    if (item.stepId !== "") lastOfStep.set(item.stepId, i);
  });
  const afterEntry = new Map<number, EvidenceItem[]>();
  const timed: EvidenceItem[] = [];
  for (const outcome of [...outcomes].sort((a, b) => a.createdAt - b.createdAt)) {
    const at = outcome.stepId === "" ? undefined : lastOfStep.get(outcome.stepId);
    if (at === undefined) timed.push(outcome);
    else afterEntry.set(at, [...(afterEntry.get(at) ?? []), outcome]);
  }
  const ordered: EvidenceItem[] = [];
  let next = 0;
  entries.forEach((entry, i) => {
    while (next < timed.length && (timed[next] as EvidenceItem).createdAt < entry.createdAt) ordered.push(timed[next++] as EvidenceItem);
    ordered.push(entry, ...(afterEntry.get(i) ?? []));
  });
  return [...ordered, ...timed.slice(next)];
}

function lessonEntry(candidate: PreparedCandidate, input: ReflectRequestInput, autoExtracted: boolean, now: number, quarantined: boolean, trust: Trust): NewEntry {
  const { lesson } = candidate;
  const learning = initialLearning(lesson.confidence, input.runId);
  return newEntry({
    owner: input.owner,
    runId: input.runId,
    agentId: input.agentId,
    userId: input.userId,
    entryType: lesson.lessonType === "rule" ? "rule" : "lesson",
    content: lesson.content,
    lessonScope: lesson.scope,
    lessonType: lesson.lessonType,
    importance: lesson.importance,
    metadataJson: JSON.stringify({ conditions: lesson.conditions, situations: candidate.situations, rationale: lesson.rationale, written_by: "reflect" }),
    occurrenceTime: Math.floor(now / 1000),
    source: autoExtracted ? "system" : "agent",
    derived: autoExtracted,
    confidence: lesson.confidence,
    sourceIds: lesson.sourceIds.slice(0, MAX_SOURCE_IDS),
    // An extracted lesson is the server's, as trusted as its evidence; a caller's lesson keeps the caller's origin.
    ...(autoExtracted ? { provenance: derivedProvenance(trust) } : {}),
    learning: quarantined ? { ...learning, promotionState: "quarantined", promotionTargetScope: lesson.scope } : learning,
  });
}

function sameCandidate(a: PreparedCandidate, b: PreparedCandidate): boolean {
  if (a.lesson.lessonType !== b.lesson.lessonType || a.lesson.scope !== b.lesson.scope) return false;
  return jaccard(a.terms, b.terms) >= DUPLICATE_TERM_OVERLAP || cosine(a.vector, b.vector) >= DUPLICATE_COSINE;
}

/**
 * A lesson's metadata with a re-learned candidate's conditions and failure signatures added: the situations it was
 * learned in widen what it is recalled for in other runs (see retrieval/ranking/cross-run.ts). Undefined when they add
 * nothing.
 */
function grownMetadata(metadataJson: string, candidate: PreparedCandidate): string | undefined {
  const withConditions = withSituations(metadataJson, "conditions", candidate.lesson.conditions);
  const withSeen = withSituations(withConditions ?? metadataJson, "situations", candidate.situations);
  return withSeen ?? withConditions;
}

function stepOf(metadataJson: string): string {
  if (!metadataJson.includes("step_id")) return "";
  try {
    const value: unknown = JSON.parse(metadataJson);
    const step = typeof value === "object" && value !== null ? (value as Record<string, unknown>)["step_id"] : undefined;
    return typeof step === "string" ? step : "";
  } catch {
    return "";
  }
}

function clip(text: string): string {
  return text.length > MAX_EVIDENCE_CHARS ? text.slice(0, MAX_EVIDENCE_CHARS) : text;
}

function callerSummary(results: readonly LessonDecisionResult[]): string {
  const count = (kind: DecisionKind): number => results.filter((r) => r.decision === kind).length;
  return `${results.length} supplied lessons: ${count("accepted")} accepted, ${count("merged")} merged, ${count("rejected")} rejected, ${count("quarantined")} quarantined.`;
}
