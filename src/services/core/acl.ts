// Access-control routes: grant, revoke and check read/write permissions on the caller's runs (or lanes of them).
import type { HandlerContext } from "@connectrpc/connect";
import { callerOf } from "../../auth/principal.js";
import type { AccessControl, Permission, PrincipalType } from "../../acl/access-control.js";
import { invalidArgument, notFound } from "../../platform/errors.js";
import type { UserStore } from "../../storage/user-store.js";
import { bounded, oneOf, required } from "../memory/validate.js";
import type { CoreHandlers } from "./core-service.js";

const PRINCIPAL_TYPES: readonly PrincipalType[] = ["user", "agent"];
const PERMISSIONS: readonly Permission[] = ["read", "write"];

interface GrantFields {
  readonly principalType: string;
  readonly principalId: string;
  readonly runId: string;
  readonly lane: string;
}

function parse(req: GrantFields, ctx: HandlerContext) {
  return {
    owner: callerOf(ctx).userId,
    principalType: oneOf("principal_type", req.principalType, PRINCIPAL_TYPES, "user"),
    principalId: required("principal_id", req.principalId),
    runId: required("run_id", req.runId),
    lane: bounded("lane", req.lane),
  };
}

function requiredPermission(value: string): Permission {
  if (value === "") throw invalidArgument("permission", "is required: read or write");
  return oneOf("permission", value, PERMISSIONS, "read");
}

export function aclHandlers(acl: AccessControl, users: UserStore): CoreHandlers {
  return {
    async grantPermission(req, ctx) {
      const grant = parse(req, ctx);
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
      const grant = parse(req, ctx);
      const permission = req.permission === "" ? "" : oneOf("permission", req.permission, PERMISSIONS, "read");
      const removed = await acl.revoke(grant.owner, grant.runId, grant.principalType, grant.principalId, grant.lane, permission);
      return {
        success: removed,
        message: removed ? `revoked ${permission || "read and write"} from ${grant.principalType} "${grant.principalId}"` : "no matching grant",
      };
    },

    checkPermission(req, ctx) {
      const caller = callerOf(ctx);
      const grant = parse(req, ctx);
      const permission = requiredPermission(req.permission);
      const self = grant.principalType === "user" && grant.principalId === caller.username;
      const reason = self ? "owner" : acl.check(grant.owner, grant.runId, grant.principalType, grant.principalId, grant.lane, permission);
      return { allowed: reason !== "none", reason };
    },
  };
}
