// Turns a validated question into a search over the caller's scope: the one retrieval path of recall, query
// and context.
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf, isAdmin } from "../../auth/principal.js";
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

export async function retrieve(index: MemoryIndex, ctx: HandlerContext, q: Question): Promise<SearchResult> {
  const caller = callerOf(ctx);
  const vector = q.vector ?? (q.text.trim() === "" ? undefined : (await index.embedder.embed([q.text]))[0]);
  return index.search.search({
    owner: caller.userId,
    admin: isAdmin(caller),
    runIds: q.runIds,
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
