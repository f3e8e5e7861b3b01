// Access-control routes: grant, revoke and check read/write permissions on the caller's runs (or lanes of them). A run
// may also be named by one of its core nodes (`node_id`), as clients with node-level permissions do.
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf, type Principal } from "../../auth/principal.js";
import { PERMISSIONS, PRINCIPAL_TYPES, type AccessControl, type Permission } from "../../acl/access-control.js";
import { invalidArgument, notFound, permissionDenied } from "../../platform/errors.js";
import type { UserStore } from "../../storage/user-store.js";
import { bounded, oneOf, required } from "../memory/validate.js";
import type { CoreHandlers } from "./core-service.js";

/** Owner and run of a core node the caller may read; undefined alike when there is none and when it is out of reach. */
export type LocateNode = (caller: Principal, nodeId: bigint) => { readonly owner: number; readonly runId: string } | undefined;

interface GrantFields {
  readonly principalType: string;
  readonly principalId: string;
  readonly runId: string;
  readonly lane: string;
  readonly nodeId: bigint;
}

/**
 * The run a request names: `run_id`, or the run holding `node_id`, which must be a node of the caller (grants are made
 * by a run's owner). Both given: they must agree.
 */
function runOf(req: GrantFields, caller: Principal, locateNode: LocateNode): string {
  if (req.nodeId === 0n) {
    if (req.runId.trim() === "") throw invalidArgument("run_id", "is required (or node_id, a node of the run)");
    return required("run_id", req.runId);
  }
  const runId = bounded("run_id", req.runId);
  const what = `node ${req.nodeId}`;
  // The lookup is scoped: a node the caller cannot read answers as missing, so its existence does not leak.
  const node = locateNode(caller, req.nodeId);
  if (node === undefined) throw notFound(what);
  if (node.owner !== caller.userId) {
    throw permissionDenied(`${what} is in run "${node.runId}" of another user; only a run's owner manages its permissions`);
  }
  if (runId !== "" && runId !== node.runId) throw invalidArgument("node_id", `${what} is in run "${node.runId}", not in run_id "${runId}"`);
  return node.runId;
}

function parse(req: GrantFields, ctx: HandlerContext, locateNode: LocateNode) {
  const caller = callerOf(ctx);
  return {
    owner: caller.userId,
    principalType: oneOf("principal_type", req.principalType, PRINCIPAL_TYPES, "user"),
    principalId: required("principal_id", req.principalId),
    runId: runOf(req, caller, locateNode),
    lane: bounded("lane", req.lane),
  };
}

function requiredPermission(value: string): Permission {
  if (value === "") throw invalidArgument("permission", "is required: read or write");
  return oneOf("permission", value, PERMISSIONS, "read");
}

export function aclHandlers(acl: AccessControl, users: UserStore, locateNode: LocateNode): CoreHandlers {
  return {
    async grantPermission(req, ctx) {
      const grant = parse(req, ctx, locateNode);
      const permission = requiredPermission(req.permission);
      if (grant.principalType === "user" && users.get(grant.principalId) === undefined) {
        throw notFound(`user "${grant.principalId}"`);
      }
      const changed = await acl.grant({ ...grant, permission });
      const on = grant.lane === "" ? `run "${grant.runId}"` : `lane "${grant.lane}" of run "${grant.runId}"`;
      return {
        success: true,
        message: changed
          ? `granted ${permission} on ${on} to ${grant.principalType} "${grant.principalId}"`
          : `${grant.principalType} "${grant.principalId}" already holds ${permission} on ${on}`,
      };
    },

    async revokePermission(req, ctx) {
      const grant = parse(req, ctx, locateNode);
      const permission = req.permission === "" ? "" : oneOf("permission", req.permission, PERMISSIONS, "read");
      const removed = await acl.revoke(grant.owner, grant.runId, grant.principalType, grant.principalId, grant.lane, permission);
      return {
        success: removed,
        message: removed ? `revoked ${permission || "read and write"} on run "${grant.runId}" from ${grant.principalType} "${grant.principalId}"` : "no matching grant",
      };
    },

    checkPermission(req, ctx) {
      const caller = callerOf(ctx);
      const grant = parse(req, ctx, locateNode);
      const permission = requiredPermission(req.permission);
      const self = grant.principalType === "user" && grant.principalId === caller.username;
      const reason = self ? "owner" : acl.check(grant.owner, grant.runId, grant.principalType, grant.principalId, grant.lane, permission);
      return { allowed: reason !== "none", reason };
    },
  };
}
