// Labels for each owner, and ids that never existed but look like real ones: same prefix, same alphabet, same kind of
// number, so a route cannot tell them apart by shape and answers them as it answers any id it does not hold.
import { randomBytes, randomInt } from "node:crypto";
import { LABEL_KINDS, type Kind, type LabelKind } from "./id-kinds.js";

/** Short tags keep the labels of two kinds from colliding; the letter after the dash says whose label it is. */
const TAGS: Readonly<Record<LabelKind, string>> = {
  run: "run",
  otherRun: "run2",
  agent: "agent",
  userLabel: "user",
  step: "step",
  task: "task",
  item: "item",
  attempt: "attempt",
  lane: "lane",
  upsertKey: "upsert",
  ingestKey: "ingest",
  outcomeKey: "outcome",
  variable: "var",
  concept: "concept",
  projectName: "project",
  skillName: "skill",
  scratchpad: "pad",
  scratchKey: "key",
  snapshot: "snap",
};

function hex(bytes: number): string {
  return randomBytes(bytes).toString("hex");
}

/**
 * An owner's labels. `a` (the victim) and `g` (never used by anyone) carry random tails of one length and sort before
 * the twins' shared `own` labels, so a list that sorts by name puts them in the same place for both twins.
 */
export function labels(who: "a" | "g" | "own"): Record<LabelKind, string> {
  const out = {} as Record<LabelKind, string>;
  for (const kind of LABEL_KINDS) out[kind] = who === "own" ? `${TAGS[kind]}-own` : `${TAGS[kind]}-${who}${hex(4)}`;
  return out;
}

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function randomFrom(alphabet: string, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** A never-existing id shaped like `real`. */
export function ghostOf(real: string): string {
  // Core node ids: decimal, from a server-wide counter far below this.
  if (/^\d+$/.test(real)) return String(BigInt(real) + 7_000_000_000_000n + BigInt(randomInt(1_000_000)));
  // `skv_<24 hex>_<n>`: a version of a skill that does not exist.
  const skillVersion = /^skv_([0-9a-f]+)_(\d+)$/.exec(real);
  if (skillVersion) return `skv_${hex((skillVersion[1] ?? "").length / 2)}_${skillVersion[2]}`;
  // `prefix_<hex>` of a random id (cs_, skl_): the same number of hex digits.
  const randomHex = /^([a-z]+_)([0-9a-f]{16,})$/.exec(real);
  if (randomHex) return `${randomHex[1]}${hex((randomHex[2] ?? "").length / 2)}`;
  // `pv_<decimal>` from a sequence: far past it.
  const decimal = /^([a-z]+_)(\d+)$/.exec(real);
  if (decimal) return `${decimal[1]}${BigInt(decimal[2] ?? "0") + 7_000_000_000n + BigInt(randomInt(1_000_000))}`;
  // `sub_<base64url>`, `run_<alphanumerics>`: random text of the same length and alphabet.
  const long = /^([a-z]+_)([A-Za-z0-9_-]{16,})$/.exec(real);
  if (long) return `${long[1]}${randomFrom(/[-_]/.test(long[2] ?? "") ? BASE64URL : BASE64URL.slice(0, 62), (long[2] ?? "").length)}`;
  // `ent_1f`, `hof_3`...: base-36 sequences; a value far past any the test reaches, still at most 12 digits.
  const base36 = /^([a-z]+_)([0-9a-z]{1,12})$/.exec(real);
  if (base36) return `${base36[1]}${(36 ** 7 + randomInt(36 ** 6)).toString(36)}`;
  throw new Error(`no ghost shape for id ${real}: add one in test/isolation/ghosts.ts`);
}

/** Ghosts for every kind: fresh labels, and ghost ids shaped like the victim's. */
export function ghostsOf(victim: Readonly<Record<Kind, string>>): Record<Kind, string> {
  const ghost = { ...victim, ...labels("g") };
  for (const [kind, value] of Object.entries(victim) as [Kind, string][]) {
    if (!(LABEL_KINDS as readonly string[]).includes(kind)) ghost[kind] = kind === "username" ? value.replace(/^iso-a/, "iso-g") : ghostOf(value);
  }
  return ghost;
}
