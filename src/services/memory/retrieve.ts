// Turns a validated question into a search over the caller's scope: the one retrieval path of recall, query
// and context.
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf, isAdmin, type Principal } from "../../auth/principal.js";
import type { AccessControl } from "../../acl/access-control.js";
import type { RunScope } from "../../retrieval/catalog.js";
import type { EntryType } from "../../storage/entry-store.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { Budget, RankBy, SearchResult } from "../../retrieval/search-engine.js";
import type { TimeBounds } from "./validate.js";

export interface Question {
  readonly runIds: readonly string[];
  readonly text: string;
  readonly vector: Float32Array | undefined;
  readonly userId: string;
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
  readonly laneFilter: string;
  readonly time: TimeBounds;
  readonly includeWorkingMemory: boolean;
  readonly includeGlobalLessons: boolean;
  readonly limit: number;
  readonly budget: Budget;
  readonly rankBy: RankBy;
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

export async function retrieve(index: MemoryIndex, acl: AccessControl, ctx: HandlerContext, q: Question): Promise<SearchResult> {
  const caller = callerOf(ctx);
  const vector = q.vector ?? (q.text.trim() === "" ? undefined : (await index.embedder.embed([q.text]))[0]);
  return index.search.search({
    owner: caller.userId,
    scopes: readableScopes(acl, caller, q.runIds),
    includeGlobalLessons: q.includeGlobalLessons,
    text: q.text,
    queryVector: vector,
    filter: {
      entryTypes: q.entryTypes,
      userId: q.userId === "" ? undefined : q.userId,
      laneFilter: q.laneFilter,
      minTimestamp: q.time.min,
      maxTimestamp: q.time.max,
    },
    includeWorkingMemory: q.includeWorkingMemory,
    limit: q.limit,
    budget: q.budget,
    rankBy: q.rankBy,
  });
}
