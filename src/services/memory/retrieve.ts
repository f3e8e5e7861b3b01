// The memory routes' way into scoped search: the caller comes from the handler context, the rest is the domain's
// (src/memory/scoped-search.ts).
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf } from "../../auth/principal.js";
import type { AccessControl } from "../../acl/access-control.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import { searchReadable, type Question, type Retrieved } from "../../memory/scoped-search.js";

export { readableScopes, type Question, type Retrieved } from "../../memory/scoped-search.js";

export function retrieve(index: MemoryIndex, acl: AccessControl, ctx: HandlerContext, q: Question): Promise<Retrieved> {
  return searchReadable(index, acl, callerOf(ctx), q);
}
