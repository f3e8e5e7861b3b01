// API keys: `mem_<instance_tag>_<key_id>_<secret>`. Parsing, minting, hashing and constant-time checking.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const KEY_PREFIX = "mem";

export interface ParsedKey {
  readonly instanceTag: string;
  readonly keyId: string;
  readonly secret: string;
}

const TAG = /^[A-Za-z0-9]{1,32}$/;
const KEY_ID = /^[A-Za-z0-9]{4,64}$/;
const SECRET = /^[A-Za-z0-9]{16,256}$/;

/** Why a presented key was refused; never includes the secret. */
export type KeyProblem = "missing" | "malformed";

/** Splits a key into its four segments, or says why it cannot. */
export function parseApiKey(raw: string | undefined): ParsedKey | KeyProblem {
  if (raw === undefined || raw === "") return "missing";
  const parts = raw.split("_");
  if (parts.length !== 4) return "malformed";
  const [prefix, instanceTag, keyId, secret] = parts as [string, string, string, string];
  if (prefix !== KEY_PREFIX || !TAG.test(instanceTag) || !KEY_ID.test(keyId) || !SECRET.test(secret)) {
    return "malformed";
  }
  return { instanceTag, keyId, secret };
}

/** Reads `Bearer <key>` from an Authorization header value. */
export function bearerToken(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Constant-time comparison of a presented secret against a stored hash. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = Buffer.from(hashSecret(secret), "hex");
  const stored = Buffer.from(storedHash, "hex");
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

export interface MintedKey extends ParsedKey {
  readonly key: string;
  readonly secretHash: string;
}

export function formatApiKey(parts: ParsedKey): string {
  return [KEY_PREFIX, parts.instanceTag, parts.keyId, parts.secret].join("_");
}

/** Makes a fresh key for an instance: 64-bit key id, 256-bit secret, both hex. */
export function mintApiKey(instanceTag: string): MintedKey {
  const keyId = randomBytes(8).toString("hex");
  const secret = randomBytes(32).toString("hex");
  return { instanceTag, keyId, secret, key: formatApiKey({ instanceTag, keyId, secret }), secretHash: hashSecret(secret) };
}
