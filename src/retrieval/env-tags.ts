// Environment tags (`TYPE:NAME` or `TYPE:NAME:VERSION`, e.g. `lang:python:3.12`): their syntax, and a second-phase
// ranking stage that lifts hits whose entry tags match the caller's and lowers, slightly, hits whose tags conflict.
import type { Hit } from "./search-engine.js";

/** The syntax of one tag; NAME may hold `/` (`os:linux/arm64`), VERSION may not hold `:`. */
export const ENV_TAG_PATTERN = /^[A-Za-z0-9_.+-]+:[A-Za-z0-9_.+/-]+(:[A-Za-z0-9_.+-]+)?$/;
/** Score multiplier per caller tag an entry matches. */
export const ENV_TAG_MATCH_FACTOR = 1.1;
/** Score multiplier per caller tag an entry conflicts with (same TYPE:NAME, another version): milder than a match. */
export const ENV_TAG_CONFLICT_FACTOR = 0.95;

export interface EnvTag {
  /** `type:name`, lowercase. */
  readonly key: string;
  /** Lowercase; "" when the tag has none. */
  readonly version: string;
}

export function isEnvTag(text: string): boolean {
  return ENV_TAG_PATTERN.test(text);
}

/** The parsed tag, or undefined when `text` is not a tag. */
export function parseEnvTag(text: string): EnvTag | undefined {
  if (!ENV_TAG_PATTERN.test(text)) return undefined;
  const [type, name, version = ""] = text.toLowerCase().split(":") as [string, string, string?];
  return { key: `${type}:${name}`, version };
}

/** Versions agree when either is absent, they are equal, or one is a dotted prefix of the other (`3` and `3.12`). */
function versionsAgree(a: string, b: string): boolean {
  if (a === "" || b === "" || a === b) return true;
  return a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
}

/**
 * The multiplier of an entry's score: ENV_TAG_MATCH_FACTOR for every caller tag one of its tags matches, else
 * ENV_TAG_CONFLICT_FACTOR when one of its tags has the same TYPE:NAME and a disagreeing version; 1 without either.
 */
export function envTagFactor(callerTags: readonly EnvTag[], entryTags: readonly string[]): number {
  if (callerTags.length === 0 || entryTags.length === 0) return 1;
  const parsed = entryTags.flatMap((text) => parseEnvTag(text) ?? []);
  let factor = 1;
  for (const wanted of callerTags) {
    const sameKey = parsed.filter((tag) => tag.key === wanted.key);
    if (sameKey.length === 0) continue;
    factor *= sameKey.some((tag) => versionsAgree(tag.version, wanted.version)) ? ENV_TAG_MATCH_FACTOR : ENV_TAG_CONFLICT_FACTOR;
  }
  return factor;
}

/**
 * Re-ranks hits by their env tags: every hit's score is multiplied by its factor and the hits are re-sorted by it,
 * ties keeping their order; hits found by an exact reference stay first, as the engine placed them. The set of hits is
 * unchanged. Without caller tags the hits are returned as they are.
 */
export function rerankByEnvTags(hits: readonly Hit[], callerTags: readonly EnvTag[]): Hit[] {
  if (callerTags.length === 0) return [...hits];
  const exact = hits.filter((hit) => hit.mode === "exact_reference");
  const ranked = hits
    .filter((hit) => hit.mode !== "exact_reference")
    .map((hit, order) => ({ hit: { ...hit, score: hit.score * envTagFactor(callerTags, hit.entry.envTags) }, order }))
    .sort((a, b) => b.hit.score - a.hit.score || a.order - b.order)
    .map(({ hit }) => hit);
  return [...exact, ...ranked];
}
