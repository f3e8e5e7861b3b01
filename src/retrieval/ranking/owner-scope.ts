// A reader's scope split by owner: ranking computes every statistic of an owner's entries from that owner's data.
//
// The isolation rule: an entry is scored with the statistics of its own owner (BM25 document count, length and
// frequencies; RM3 feedback drawn from that owner's results; the author names that owner's entries carry), over
// candidates drawn only from the reader's scope. A reader who sees only their own entries therefore gets results
// that nothing another owner writes can change; a reader whose scope spans owners (access grants, admins) sees each
// owner's entries ranked as that owner's own statistics rank them, then merged.
import type { Catalog, RunScope } from "../catalog.js";

export interface OwnerScope {
  readonly owner: number;
  /** The owner's entries in each scoped run, ascending (lane limits are left to the scope predicate). */
  readonly runs: readonly (readonly number[])[];
  /** The owner's global lessons when they join the candidates, else empty; ascending. */
  readonly globalLessons: readonly number[];
  /** The owner's rules and lessons in the scoped runs, plus its joining global lessons; ascending lists. */
  readonly knowledge: readonly (readonly number[])[];
}

/**
 * The owners a scope spans, ascending, each with its lists: a scope with an owner is that owner's; one without
 * (admins) spans every owner with entries in the run; `globalLessonOwner`'s global lessons join when set.
 */
export function ownerScopes(catalog: Catalog, scopes: readonly RunScope[], globalLessonOwner: number | undefined): OwnerScope[] {
  const byOwner = new Map<number, { runs: (readonly number[])[]; globalLessons: readonly number[]; knowledge: (readonly number[])[] }>();
  const of = (owner: number): { runs: (readonly number[])[]; globalLessons: readonly number[]; knowledge: (readonly number[])[] } => {
    let scope = byOwner.get(owner);
    if (scope === undefined) byOwner.set(owner, (scope = { runs: [], globalLessons: [], knowledge: [] }));
    return scope;
  };
  for (const scope of scopes) {
    for (const owner of scope.owner === undefined ? catalog.runOwners(scope.runId) : [scope.owner]) {
      const runSeqs = catalog.runSeqs(owner, scope.runId);
      if (runSeqs.length === 0) continue;
      const lists = of(owner);
      lists.runs.push(runSeqs);
      const knowledge = catalog.knowledgeSeqs(owner, scope.runId);
      if (knowledge.length > 0) lists.knowledge.push(knowledge);
    }
  }
  if (globalLessonOwner !== undefined) {
    const lessons = catalog.globalLessonSeqs(globalLessonOwner);
    if (lessons.length > 0) {
      const lists = of(globalLessonOwner);
      lists.globalLessons = lessons;
      lists.knowledge.push(lessons);
    }
  }
  return [...byOwner]
    .sort(([a], [b]) => a - b)
    .map(([owner, lists]) => ({ owner, ...lists }));
}

/** Every list of candidates in the scopes: runs and joining global lessons. */
export function candidateLists(scopes: readonly OwnerScope[]): (readonly number[])[] {
  return scopes.flatMap((scope) => (scope.globalLessons.length > 0 ? [...scope.runs, scope.globalLessons] : scope.runs));
}
