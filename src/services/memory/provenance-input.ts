// The provenance and expiry fields of a write (remember, ingest and batch-insert items): validated at the boundary,
// with the trust level from the server's policy when the write states none.
import type { Provenance as ProvenanceInput } from "../../../gen/engram/v2/memory_service_pb.js";
import { invalidArgument } from "../../platform/errors.js";
import { MAX_TOOL_NAME_CHARS, MAX_URL_CHARS, ORIGINS, TRUST_LEVELS, originOfSource, type Provenance, type TrustPolicy } from "../../storage/provenance.js";
import { MAX_TTL_SECONDS } from "../../storage/retention-store.js";
import { oneOf } from "./validate.js";

/** What a write needs to settle its provenance and expiry: the policy, the writing key and the memory's clock. */
export interface WriteOrigin {
  readonly trustPolicy: TrustPolicy;
  readonly keyId: string;
  /** Unix milliseconds now, from the memory's clock (tests control it). */
  readonly now: number;
}


export function provenanceOf(field: string, input: ProvenanceInput | undefined, source: string, origin: WriteOrigin): Provenance {
  // Most writes state none: nothing to check (every item of a bulk write comes through here).
  if (input === undefined || (input.origin === "" && input.toolName === "" && input.url === "" && input.trust === "")) {
    const kind = originOfSource(source);
    return { origin: kind, toolName: "", url: "", trust: origin.trustPolicy[kind], keyId: origin.keyId };
  }
  const stated = input;
  const kind = oneOf(`${field}.origin`, stated.origin, ORIGINS, originOfSource(source));
  const toolName = stated.toolName;
  if (toolName.length > MAX_TOOL_NAME_CHARS) throw invalidArgument(`${field}.tool_name`, `must be at most ${MAX_TOOL_NAME_CHARS} characters`);
  const url = stated.url;
  if (url.length > MAX_URL_CHARS) throw invalidArgument(`${field}.url`, `must be at most ${MAX_URL_CHARS} characters`);
  if (/[\u0000-\u001f\s]/u.test(url)) throw invalidArgument(`${field}.url`, "must not contain whitespace or control characters");
  if (/[\u0000-\u001f]/u.test(toolName)) throw invalidArgument(`${field}.tool_name`, "must not contain control characters");
  const trust = oneOf(`${field}.trust`, stated.trust, TRUST_LEVELS, origin.trustPolicy[kind]);
  return { origin: kind, toolName, url, trust, keyId: origin.keyId };
}

/** Unix milliseconds the entry expires at, 0 for never, from `ttl_seconds` or `expires_at` (never both). */
export function expiryOf(prefix: string, ttlSeconds: bigint | number, expiresAt: string, now: number): number {
  const ttl = Number(ttlSeconds);
  if (ttl === 0 && expiresAt === "") return 0;
  const ttlField = `${prefix}ttl_seconds`;
  const atField = `${prefix}expires_at`;
  if (ttl !== 0 && expiresAt !== "") throw invalidArgument(ttlField, `cannot be set together with ${atField}`);
  if (ttl !== 0) {
    if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) throw invalidArgument(ttlField, `must be 1 to ${MAX_TTL_SECONDS} seconds, got ${ttlSeconds}`);
    return now + ttl * 1000;
  }
  if (expiresAt === "") return 0;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(expiresAt)) throw invalidArgument(atField, "must be an RFC 3339 time");
  const at = Date.parse(expiresAt);
  if (!Number.isFinite(at)) throw invalidArgument(atField, "must be an RFC 3339 time");
  if (at <= now) throw invalidArgument(atField, "must be in the future");
  return at;
}
