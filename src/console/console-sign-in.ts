// Checks a console sign-in in-process: the API key must authenticate and belong to the username given with it.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";

/** The one answer for every refused pair, so that it never tells which of the two was wrong. */
export const SIGN_IN_REFUSED = "invalid username or API key";

/**
 * The principal the key stands for when it authenticates and is `username`'s; undefined otherwise (malformed, unknown,
 * revoked, another instance's, or another user's key). Other failures (storage) are not swallowed.
 */
export function verifyKeyOf(authenticator: Authenticator, username: string, apiKey: string): Principal | undefined {
  let principal: Principal;
  try {
    principal = authenticator.authenticate(`Bearer ${apiKey}`);
  } catch (e: unknown) {
    if (e instanceof ConnectError && e.code === Code.Unauthenticated) return undefined;
    throw e;
  }
  return principal.username === username ? principal : undefined;
}
