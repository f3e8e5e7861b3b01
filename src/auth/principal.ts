// The authenticated caller of a request, carried in the request's context values.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Role } from "../storage/user-store.js";
import { unauthenticated } from "../platform/errors.js";

export interface Principal {
  readonly userId: number;
  readonly username: string;
  readonly role: Role;
  readonly keyId: string;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "caller" });

/** The caller of an authenticated RPC; the auth interceptor guarantees one is set. */
export function callerOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (principal === undefined) throw unauthenticated("missing API key");
  return principal;
}

export function isAdmin(principal: Principal): boolean {
  return principal.role === "admin";
}
