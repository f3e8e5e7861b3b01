// Who may reach a node: its owner, admins, and users holding a grant on the node's run. Other users' nodes answer
// NOT_FOUND without a read grant (their existence does not leak) and PERMISSION_DENIED without a needed write grant.
// Every lookup of a node by id (NodeStore.reach/find, SessionChain.reach) goes through `reachNode`, so another owner's
// node and a missing one take the same path to the same error.
import type { AccessControl, Permission } from "../acl/access-control.js";
import type { Principal } from "../auth/principal.js";
import { notFound, permissionDenied } from "../platform/errors.js";
import type { NodeRecord } from "./node-record.js";

export function mayRead(acl: AccessControl, caller: Principal, record: NodeRecord): boolean {
  return acl.allows(caller, record.owner, record.runId, "", "read");
}

/**
 * The node when the caller may act on it with `permission`; `what` names it in errors ("node 5"). NOT_FOUND, with
 * the same text, whether `found` is undefined or a node the caller may not read.
 */
export function reachNode<T extends { readonly record: NodeRecord }>(
  acl: AccessControl,
  caller: Principal,
  found: T | undefined,
  permission: Permission,
  what: string,
): T {
  if (found === undefined || !mayRead(acl, caller, found.record)) throw notFound(what);
  if (permission === "write" && !acl.allows(caller, found.record.owner, found.record.runId, "", "write")) {
    throw permissionDenied(`${what} is in run "${found.record.runId}" of another user, who has not granted you write access`);
  }
  return found;
}
