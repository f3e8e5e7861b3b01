// One question searched over what a caller may read: the one retrieval path of recall, query and context. Resolves the
// caller's scope (own runs, granted runs and lanes, everything for admins), embeds the question, runs the engine and
// then the second-phase stages that sit outside it (env-tag re-ranking).
import { isAdmin, type Principal } from "../auth/principal.js";
import type { AccessControl } from "../acl/access-control.js";
import type { RunScope } from "../retrieval/catalog.js";
import { rerankByEnvTags, type EnvTag } from "../retrieval/env-tags.js";
import type { Budget, RankBy, SearchRequest, SearchResult } from "../retrieval/search-engine.js";
import type { EntryType } from "../storage/entry-store.js";
import type { MemoryIndex } from "./memory-index.js";
import type { ProvenanceFilter } from "./provenance-filter.js";

export interface Question {
  readonly runIds: readonly string[];
  readonly text: string;
  /** The caller's query vector; undefined embeds `text`. */
  readonly vector: Float32Array | undefined;
  /**
   * The caller vector space `vector` belongs to (then required); each owner's entries in scope are compared in that
   * owner's space of this name. Undefined or "": the server embedder's space.
   */
  readonly vectorSpace?: string | undefined;
  readonly userId: string;
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
  readonly laneFilter: string;
  readonly time: { readonly min: number | undefined; readonly max: number | undefined };
  readonly includeWorkingMemory: boolean;
  readonly includeGlobalLessons: boolean;
  readonly limit: number;
  readonly budget: Budget;
  readonly rankBy: RankBy;
  /** The caller's environment tags; hits are re-ranked by them. */
  readonly envTags?: readonly EnvTag[];
  /** When the question cannot be embedded, search lexically instead of failing (see `vectorSkipped`). */
  readonly tolerateEmbedderFailure?: boolean;
  /** Only entries of these lanes ("" for no lane): the view of a registered agent. Undefined: every lane. */
  readonly lanes?: ReadonlySet<string> | undefined;
  /** Only entries of some origins or one trust level; undefined: any. */
  readonly provenance?: ProvenanceFilter | undefined;
}

export interface Retrieved extends SearchResult {
  /** Why the vector source was skipped ("" when it was not): the question could not be embedded. */
  readonly vectorSkipped: string;
}

/**
 * The entries a caller may read in some runs: everyone's for admins; otherwise the caller's own plus, for each run,
 * those of owners who granted the caller read access to it (limited to the granted lanes).
 */
export function readableScopes(acl: AccessControl, caller: Principal, runIds: readonly string[]): RunScope[] {
  if (isAdmin(caller)) return runIds.map((runId) => ({ owner: undefined, runId }));
  return runIds.flatMap((runId) => [
    { owner: caller.userId, runId },
    ...acl.readableRuns(caller, runId).map((granted) => ({ owner: granted.owner, runId, lanes: granted.lanes })),
  ]);
}

/** Scopes limited to some lanes as well (a registered agent's view); undefined leaves them as they are. */
export function withinLanes(scopes: readonly RunScope[], lanes: ReadonlySet<string> | undefined): RunScope[] {
  if (lanes === undefined) return [...scopes];
  return scopes.map((scope) => ({ ...scope, lanes: scope.lanes === undefined ? lanes : new Set([...scope.lanes].filter((lane) => lanes.has(lane))) }));
}

async function questionVector(index: MemoryIndex, q: Question): Promise<{ vector: Float32Array | undefined; skipped: string }> {
  if (q.vector !== undefined || q.text.trim() === "") return { vector: q.vector, skipped: "" };
  try {
    return { vector: (await index.embedder.embed([q.text]))[0], skipped: "" };
  } catch (e: unknown) {
    if (q.tolerateEmbedderFailure !== true) throw e;
    return { vector: undefined, skipped: e instanceof Error ? e.message : String(e) };
  }
}

export async function searchReadable(index: MemoryIndex, acl: AccessControl, caller: Principal, q: Question): Promise<Retrieved> {
  const inSpace = q.vectorSpace !== undefined && q.vectorSpace !== "" && q.vector !== undefined;
  const { vector, skipped } = await questionVector(index, q);
  const request: SearchRequest = {
    dense: inSpace ? index.spaces.source(q.vectorSpace as string, (q.vector as Float32Array).length) : undefined,
    owner: caller.userId,
    scopes: withinLanes(readableScopes(acl, caller, q.runIds), q.lanes),
    includeGlobalLessons: q.includeGlobalLessons,
    text: q.text,
    queryVector: vector,
    filter: {
      entryTypes: q.entryTypes,
      userId: q.userId === "" ? undefined : q.userId,
      laneFilter: q.laneFilter,
      minTimestamp: q.time.min,
      maxTimestamp: q.time.max,
      origins: q.provenance?.origins,
      trust: q.provenance?.trust,
    },
    includeWorkingMemory: q.includeWorkingMemory,
    limit: q.limit,
    budget: q.budget,
    rankBy: q.rankBy,
  };
  await index.search.prepareSituations(request);
  const result = index.search.search(request);
  const hits = q.envTags === undefined || q.envTags.length === 0 ? result.hits : rerankByEnvTags(result.hits, q.envTags);
  return { ...result, hits, vectorSkipped: skipped };
}
