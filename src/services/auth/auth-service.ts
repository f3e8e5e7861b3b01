// User and key management: admin-only, except that a user may inspect itself.
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthService, type AuthUser } from "../../../gen/engram/v2/auth_service_pb.js";
import { callerOf, isAdmin, type Principal } from "../../auth/principal.js";
import { mintApiKey } from "../../auth/api-key.js";
import { ROLES, type Role, type UserRecord, type UserStore } from "../../storage/user-store.js";
import { invalidArgument, notFound, permissionDenied, quoted } from "../../platform/errors.js";

const USERNAME = /^[A-Za-z0-9._-]{1,64}$/;

function requireAdmin(caller: Principal): void {
  if (!isAdmin(caller)) throw permissionDenied("only an admin may manage users");
}

function validUsername(username: string): string {
  if (!USERNAME.test(username)) throw invalidArgument("username", "must be 1-64 letters, digits, '.', '-' or '_'");
  return username;
}

/** A role from a request: "" is `user`; anything else must be one of ROLES, spelled exactly. */
function parseRole(role: string): Role {
  if (role === "") return "user";
  const match = ROLES.find((r) => r === role);
  if (match === undefined) throw invalidArgument("role", `must be ${ROLES.map((r) => `"${r}"`).join(" or ")}, got ${quoted(role)}`);
  return match;
}

export function authService(users: UserStore, instanceTag: string): Partial<ServiceImpl<typeof AuthService>> {
  const view = (user: UserRecord): Omit<AuthUser, "$typeName"> => ({
    username: user.username,
    userId: BigInt(user.userId),
    role: user.role,
    instanceId: instanceTag,
    apiKeyActive: user.activeKeyId !== undefined,
    keyId: user.activeKeyId ?? "",
    createdAt: user.createdAt,
  });
  const existing = (username: string): UserRecord => {
    const user = users.get(validUsername(username));
    if (user === undefined) throw notFound(`user "${username}"`);
    return user;
  };

  return {
    async createUser(req, ctx) {
      requireAdmin(callerOf(ctx));
      const username = validUsername(req.username);
      const role = parseRole(req.role);
      const minted = mintApiKey(instanceTag);
      const user = await users.create(username, role, minted);
      if (user === undefined) throw new ConnectError(`user "${username}" already exists`, Code.AlreadyExists);
      return { userId: BigInt(user.userId), apiKey: minted.key, message: `created user "${username}"`, user: view(user) };
    },

    async rotateUserApiKey(req, ctx) {
      requireAdmin(callerOf(ctx));
      existing(req.username);
      const minted = mintApiKey(instanceTag);
      const user = await users.rotate(req.username, minted);
      if (user === undefined) throw notFound(`user "${req.username}"`);
      return { success: true, apiKey: minted.key, message: `rotated the key of "${req.username}"` };
    },

    async revokeUserApiKey(req, ctx) {
      const caller = callerOf(ctx);
      requireAdmin(caller);
      const user = existing(req.username);
      if (user.activeKeyId === caller.keyId) {
        throw new ConnectError("refusing to revoke the key this request is made with", Code.FailedPrecondition);
      }
      const result = await users.revoke(req.username);
      if (result === undefined) throw notFound(`user "${req.username}"`);
      return {
        success: result.revoked,
        message: result.revoked ? `revoked the key of "${req.username}"` : `"${req.username}" had no active key`,
      };
    },

    listUsers(_req, ctx) {
      requireAdmin(callerOf(ctx));
      return { users: users.list().map(view) };
    },

    getUser(req, ctx) {
      const caller = callerOf(ctx);
      if (!isAdmin(caller) && caller.username !== req.username) {
        throw permissionDenied("a user may inspect only itself");
      }
      return { user: view(existing(req.username)) };
    },
  };
}
