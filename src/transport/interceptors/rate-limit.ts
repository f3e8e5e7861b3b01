// Limits each API key's calls with a token bucket (SERVICE_RATE_LIMIT_*): past it, RESOURCE_EXHAUSTED (HTTP 429)
// with Retry-After; every limited answer carries the IETF RateLimit and RateLimit-Policy fields.
//
// Header fields follow draft-ietf-httpapi-ratelimit-headers-09, one policy named "default":
//   RateLimit-Policy: "default";q=<per second>;w=1;burst=<burst>   the sustained quota per 1 s window; `burst` (an
//                                                                    extension parameter) is the bucket's size
//   RateLimit: "default";r=<tokens left>;t=<seconds until the bucket is full again, rounded up>
//   Retry-After: <seconds until the next token, rounded up, at least 1>   (refusals only)
// Over gRPC and Connect the same names travel as response metadata (trailers on a gRPC refusal), and the refusal's
// message says when to retry. Unauthenticated services (health probes, /metrics, reflection) are never limited; a
// stream spends one token when it opens.
//
// Calls that arrive over the network are charged by the transport before their body is read (call-admission.ts); this
// interceptor then only reports that charge. It charges the calls the transport did not (dispatched in-process).
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { principalKey } from "../../auth/principal.js";
import type { Admission, TokenBuckets } from "../../platform/token-buckets.js";
import { admittedCallKey } from "../call-context.js";

export const RATE_LIMIT_HEADER = "ratelimit";
export const RATE_LIMIT_POLICY_HEADER = "ratelimit-policy";
export const RETRY_AFTER_HEADER = "retry-after";

/** The response header fields of one admission. */
export function rateLimitFields(buckets: TokenBuckets, admission: Admission): [string, string][] {
  const { perSecond, burst } = buckets.policy;
  const fields: [string, string][] = [
    [RATE_LIMIT_POLICY_HEADER, `"default";q=${perSecond};w=1;burst=${burst}`],
    [RATE_LIMIT_HEADER, `"default";r=${admission.remaining};t=${Math.ceil(admission.fullInSeconds)}`],
  ];
  if (!admission.allowed) fields.push([RETRY_AFTER_HEADER, String(retryAfterSeconds(admission))]);
  return fields;
}

function retryAfterSeconds(admission: Admission): number {
  return Math.max(1, Math.ceil(admission.nextTokenInSeconds));
}

/** What a refused call is told. */
export function refusalMessage(buckets: TokenBuckets, admission: Admission): string {
  const { perSecond, burst } = buckets.policy;
  return `rate limit exceeded for this API key (${perSecond} calls a second, bursts of ${burst}): retry after ${retryAfterSeconds(admission)} s`;
}

export function rateLimitInterceptor(buckets: TokenBuckets, limitAdmin: boolean): Interceptor {
  return (next) => async (req) => {
    // Set by the auth interceptor before this one; absent only on the public services.
    const principal = req.contextValues.get(principalKey);
    if (principal === undefined || (principal.role === "admin" && !limitAdmin)) return next(req);
    let fields: readonly [string, string][];
    const admitted = req.contextValues.get(admittedCallKey);
    if (admitted !== undefined) {
      fields = admitted.fields;
      // The transport answers the calls it refuses itself; this only guards against one reaching the service.
      if (admitted.refusal !== undefined) throw new ConnectError(admitted.refusal, Code.ResourceExhausted, Object.fromEntries(fields));
    } else {
      const admission = buckets.take(principal.keyId);
      fields = rateLimitFields(buckets, admission);
      if (!admission.allowed) throw new ConnectError(refusalMessage(buckets, admission), Code.ResourceExhausted, Object.fromEntries(fields));
    }
    try {
      const res = await next(req);
      for (const [name, value] of fields) res.header.set(name, value);
      return res;
    } catch (e: unknown) {
      // An error answer reports the caller's remaining budget too (its metadata becomes headers or trailers).
      if (e instanceof ConnectError) for (const [name, value] of fields) e.metadata.set(name, value);
      throw e;
    }
  };
}
