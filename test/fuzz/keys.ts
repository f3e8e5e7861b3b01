// The keys a fuzzed request carries: the fuzz user's, another user's, an admin's (on a few methods only), a revoked
// one, none, and malformed ones — each a valid HTTP header value, so the server, not the client, refuses it.
import type { Rng } from "./prng.js";

export type KeyKind = "fuzz" | "intruder" | "admin" | "revoked" | "none" | "malformed";

export interface Keys {
  readonly fuzz: string;
  /** A second user, whose key is used with the fuzz user's and the victim's ids. */
  readonly intruder: string;
  readonly admin: string;
  readonly revoked: string;
  /** Used only to set up and to read the victim's data, never by the fuzzer. */
  readonly victim: string;
}

export const KEY_KINDS: readonly (readonly [KeyKind, number])[] = [
  ["fuzz", 70], ["intruder", 9], ["admin", 4], ["none", 5], ["revoked", 4], ["malformed", 8],
];

function alnum(rng: Rng, n: number): string {
  const chars = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: n }, () => chars[rng.int(chars.length)]).join("");
}

/** A key of the right shape whose secret is wrong (one character changed). */
function wrongSecret(key: string, rng: Rng): string {
  const at = key.length - 1 - rng.int(8);
  const ch = key[at] === "a" ? "b" : "a";
  return `${key.slice(0, at)}${ch}${key.slice(at + 1)}`;
}

/** The Authorization header of a key kind; undefined sends none. */
export function authorization(kind: KeyKind, keys: Keys, rng: Rng): string | undefined {
  switch (kind) {
    case "fuzz":
      return `Bearer ${keys.fuzz}`;
    case "intruder":
      return `Bearer ${keys.intruder}`;
    case "admin":
      return `Bearer ${keys.admin}`;
    case "revoked":
      return `Bearer ${keys.revoked}`;
    case "none":
      return rng.chance(0.8) ? undefined : rng.pick(["", "Bearer", "Bearer "]);
    case "malformed": {
      const [, tag = "local", keyId = "abcd"] = keys.fuzz.split("_");
      return rng.pick([
        `Bearer ${alnum(rng, 24)}`,
        `Bearer mem_${tag}_${keyId}`,
        `Bearer mem_other${tag}_${keyId}_${alnum(rng, 64)}`,
        `Bearer ${wrongSecret(keys.fuzz, rng)}`,
        `Bearer mem_${tag}_${keyId}_${alnum(rng, 64)}`,
        `Bearer mem_${tag}_${alnum(rng, 16)}_${alnum(rng, 64)}`,
        `Bearer ${keys.fuzz}_x`,
        `Bearer ${keys.fuzz} ${keys.fuzz}`,
        `Basic ${Buffer.from(`fuzz:${keys.fuzz}`).toString("base64")}`,
        keys.fuzz,
        `Bearer ${"a".repeat(rng.pick([300, 5000]))}`,
        `Bearer mem_${tag}_${keyId}_${"s".repeat(257)}`,
        "Bearer mem____",
      ]);
    }
  }
}

/** Secrets that must never appear in an answer or a log line. */
export function secretsOf(keys: Keys): string[] {
  return [keys.fuzz, keys.intruder, keys.admin, keys.revoked, keys.victim].map((k) => k.split("_")[3] ?? k);
}
