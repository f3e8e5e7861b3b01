// Spends a call's rate-limit token as soon as its headers are parsed, before its body is read. A refused call then
// costs the server its headers, one key lookup and one small answer: an abusive key that is refused thousands of times
// a second no longer makes the server parse, decode and dispatch each of those bodies, which is what raised other
// keys' latency beside it (bench/rate-limit.mjs).
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";
import type { TokenBuckets } from "../platform/token-buckets.js";
import type { AdmittedCall } from "./call-context.js";
import { PUBLIC_SERVICES } from "./interceptors/auth.js";
import type { CallRecorder } from "./interceptors/observe.js";
import { rateLimitFields, refusalMessage } from "./interceptors/rate-limit.js";

export class CallAdmission {
  readonly #authenticator: Authenticator;
  readonly #buckets: TokenBuckets;
  readonly #limitAdmin: boolean;

  constructor(authenticator: Authenticator, buckets: TokenBuckets, limitAdmin: boolean) {
    this.#authenticator = authenticator;
    this.#buckets = buckets;
    this.#limitAdmin = limitAdmin;
  }

  /**
   * Charges a call of `service` one token of its key. Undefined when the call is not limited here: a public service,
   * an admin key when admins are exempt, or a key that does not authenticate — the interceptors answer that one,
   * after the readiness check, as for any call.
   */
  admit(service: string, authorization: string | string[] | undefined): AdmittedCall | undefined {
    if (PUBLIC_SERVICES.has(service) || typeof authorization !== "string") return undefined;
    let principal: Principal;
    try {
      principal = this.#authenticator.authenticate(authorization);
    } catch {
      return undefined;
    }
    if (principal.role === "admin" && !this.#limitAdmin) return undefined;
    const admission = this.#buckets.take(principal.keyId);
    const fields = rateLimitFields(this.#buckets, admission);
    return { principal, fields, refusal: admission.allowed ? undefined : refusalMessage(this.#buckets, admission) };
  }
}

/** What the transport needs to charge calls before their bodies are read, and to record the calls it refuses. */
export interface Admitting {
  readonly admission: CallAdmission;
  readonly record: CallRecorder;
}
