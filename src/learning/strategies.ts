// Strategies: clusters of similar lessons and rules across runs (lessons sharing most of their index terms), each
// with its support, the success rate of the outcomes that credited its lessons, and a representative statement.
import { isUntrustedKnowledge } from "../memory/evidence-trust.js";
import { createHash } from "node:crypto";
import type { Catalog } from "../retrieval/catalog.js";
import { isStaleRecord, type EntryRecord, type EntryStore } from "../storage/entry-store.js";
import { lessonTypeOf, scopeOf } from "./lesson-listing.js";
import type { OutcomeStore } from "./outcome-store.js";
import { TimeSlicer } from "../memory/scan.js";
import { jaccard } from "../retrieval/text.js";

/** Lessons clustered per call: the most recent ones. */
export const MAX_CLUSTERED_LESSONS = 2_000;
/** Outcomes read for success rates: the most recent ones. */
const MAX_OUTCOMES = 5_000;
/** Term overlap (Jaccard) that puts two lessons in one cluster. */
const CLUSTER_OVERLAP = 0.34;
/** Lessons compared through one term at most: a term in more lessons than this is too common to link them. */
const MAX_LESSONS_PER_TERM = 200;
/** Pairs compared per call at most, so a call stays bounded whatever the lessons. */
const MAX_COMPARISONS = 200_000;

export interface StrategyInput {
  readonly owner: number;
  readonly runId: string;
  readonly lessonTypes: ReadonlySet<string>;
  readonly userId: string;
  readonly maxStrategies: number;
  readonly minSupport: number;
}

export interface Strategy {
  readonly id: string;
  readonly description: string;
  readonly lessons: readonly EntryRecord[];
  readonly avgConfidence: number;
  readonly avgReinforcement: number;
  readonly dominantType: string;
  readonly dominantScope: string;
  /** Positive outcomes among those that credited the cluster's lessons; 0 when none did. */
  readonly successRate: number;
  readonly outcomeCount: number;
  readonly strength: number;
}

/** Strategies among the owner's visible lessons, strongest first; computed in time slices (see memory/scan.ts). */
export async function surfaceStrategies(entries: EntryStore, catalog: Catalog, outcomes: OutcomeStore, input: StrategyInput): Promise<Strategy[]> {
  const slicer = new TimeSlicer();
  // A copy: the catalog's list may change while this awaits.
  const seqs = [...catalog.lessonSeqs(input.owner)];
  const lessons: { record: EntryRecord; terms: Set<string> }[] = [];
  for (let i = seqs.length - 1; i >= 0 && lessons.length < MAX_CLUSTERED_LESSONS; i--) {
    const pause = slicer.tick();
    if (pause) await pause;
    const seq = seqs[i] as number;
    if (catalog.isWithheld(seq) || catalog.isStale(seq)) continue;
    if (input.runId !== "" && catalog.runOf(seq) !== input.runId && !catalog.isGlobalLesson(seq)) continue;
    const record = entries.get(seq);
    if (record === undefined || isStaleRecord(record)) continue;
    // Untrusted knowledge is guidance nowhere but in its own run (see memory/evidence-trust.ts).
    if (isUntrustedKnowledge(record) && record.runId !== input.runId) continue;
    if (input.lessonTypes.size > 0 && !input.lessonTypes.has(lessonTypeOf(record))) continue;
    if (input.userId !== "" && record.userId !== "" && record.userId !== input.userId) continue;
    lessons.push({ record, terms: new Set(entries.termsOf(seq)?.keys() ?? []) });
  }
  const clusters = await cluster(lessons.map((l) => l.terms), slicer);
  const rates = outcomeRates(outcomes, input.owner);
  const strategies: Strategy[] = [];
  for (const members of clusters) {
    if (members.length < input.minSupport) continue;
    const records = members.map((i) => (lessons[i] as { record: EntryRecord }).record);
    const avgConfidence = mean(records.map((r) => r.confidence));
    let positive = 0;
    let total = 0;
    for (const r of records) {
      const rate = rates.get(r.id);
      positive += rate?.positive ?? 0;
      total += rate?.total ?? 0;
    }
    const representative = [...records].sort((a, b) => standing(b) - standing(a) || b.seq - a.seq)[0] as EntryRecord;
    strategies.push({
      id: `str_${createHash("sha256").update(records.map((r) => r.id).sort().join(",")).digest("hex").slice(0, 16)}`,
      description: records.length === 1 ? representative.content : `${representative.content} (supported by ${records.length} similar lessons)`,
      lessons: records,
      avgConfidence,
      avgReinforcement: mean(records.map((r) => r.learning.reinforcementCount)),
      dominantType: dominant(records.map(lessonTypeOf)),
      dominantScope: dominant(records.map(scopeOf)),
      successRate: total === 0 ? 0 : positive / total,
      outcomeCount: total,
      strength: records.length * avgConfidence,
    });
  }
  // Ties go by description, then id: the description survives an export and import, where the ids change.
  return strategies.sort((a, b) => b.strength - a.strength || a.description.localeCompare(b.description) || a.id.localeCompare(b.id)).slice(0, input.maxStrategies);
}

/** A lesson's standing within its cluster: confidence, raised by reinforcement. */
function standing(record: EntryRecord): number {
  return record.confidence * (1 + Math.min(record.learning.reinforcementCount, 10) / 10);
}

/** Single-link clusters of term sets: pairs sharing a selective term are compared, joined at CLUSTER_OVERLAP. */
async function cluster(termSets: readonly Set<string>[], slicer: TimeSlicer): Promise<number[][]> {
  const parent = termSets.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i] as number] as number;
    return i;
  };
  const byTerm = new Map<string, number[]>();
  termSets.forEach((set, i) => {
    for (const term of set) {
      const list = byTerm.get(term);
      if (list === undefined) byTerm.set(term, [i]);
      else list.push(i);
    }
  });
  let comparisons = 0;
  for (const list of byTerm.values()) {
    if (list.length < 2 || list.length > MAX_LESSONS_PER_TERM) continue;
    for (let a = 0; a < list.length && comparisons < MAX_COMPARISONS; a++) {
      for (let b = a + 1; b < list.length; b++) {
        const i = list[a] as number;
        const j = list[b] as number;
        // Already joined: nothing to learn from comparing them again.
        if (find(i) === find(j)) continue;
        comparisons++;
        const pause = slicer.tick();
        if (pause) await pause;
        if (jaccard(termSets[i] as Set<string>, termSets[j] as Set<string>) >= CLUSTER_OVERLAP) parent[find(i)] = find(j);
      }
    }
  }
  const groups = new Map<number, number[]>();
  termSets.forEach((_, i) => {
    const root = find(i);
    const group = groups.get(root);
    if (group === undefined) groups.set(root, [i]);
    else group.push(i);
  });
  return [...groups.values()];
}

function outcomeRates(outcomes: OutcomeStore, owner: number): Map<string, { positive: number; total: number }> {
  const rates = new Map<string, { positive: number; total: number }>();
  for (const outcome of outcomes.outcomesOfOwner(owner, MAX_OUTCOMES)) {
    for (const id of outcome.reinforcedIds) {
      const rate = rates.get(id) ?? { positive: 0, total: 0 };
      rate.total++;
      if (outcome.signal > 0) rate.positive++;
      rates.set(id, rate);
    }
  }
  return rates;
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length;
}

function dominant(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0] ?? "";
}
