// The memory routes' way into scoped search: the caller comes from the handler context, the rest is the domain's
// (src/memory/scoped-search.ts).
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { callerOf } from "../../auth/principal.js";
import type { AccessControl } from "../../acl/access-control.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { ProvenanceFilter } from "../../memory/provenance-filter.js";
import { searchReadable, type Question, type Retrieved } from "../../memory/scoped-search.js";

export { readableScopes, type Question, type Retrieved } from "../../memory/scoped-search.js";

/**
 * The provenance filter of a request whose handler builds its question without one (Recall: see memory-service.ts,
 * which validates the request's `origins` and `trust` and puts the filter here before the handler runs).
 */
export const REQUEST_PROVENANCE_FILTER = createContextKey<ProvenanceFilter | undefined>(undefined, { description: "provenance filter" });

export function retrieve(index: MemoryIndex, acl: AccessControl, ctx: HandlerContext, q: Question): Promise<Retrieved> {
  const provenance = q.provenance ?? ctx.values.get(REQUEST_PROVENANCE_FILTER);
  return searchReadable(index, acl, callerOf(ctx), provenance === undefined ? q : { ...q, provenance });
}
