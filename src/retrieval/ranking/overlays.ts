// Second-phase placement: entries the query names by id or reference come first, and the scope's standing
// knowledge (active rules, relevant lessons) is overlaid on the ranked hits.
import { isUntrustedKnowledge } from "../../memory/evidence-trust.js";
import type { EntryStore } from "../../storage/entry-store.js";
import type { Catalog } from "../catalog.js";
import type { Hit, Scored, ScoreParts, ToHit } from "./hit.js";
import { NO_PARTS } from "./hit.js";

const REFERENCE_PATTERN = /\b((?:arc|chk)_[0-9a-z]{1,12}|ent_[0-9a-z]{1,12})\b/g;
const MAX_OVERLAYS = 3;

/** Seqs of the entries the query names by id or reference id, among those `accept` admits; others are never seen. */
export function referencedSeqs(entries: EntryStore, text: string, accept: (seq: number) => boolean): number[] {
  const seqs: number[] = [];
  for (const match of text.matchAll(REFERENCE_PATTERN)) {
    const entry = entries.find(match[1] as string, (record) => accept(record.seq));
    if (entry !== undefined) seqs.push(entry.seq);
  }
  return seqs;
}

/** Puts the named entries first, above every ranked score. */
export function placeReferences(hits: Hit[], taken: Set<number>, seqs: readonly number[], topScore: number, parts: ScoreParts, toHit: ToHit): void {
  for (const seq of seqs) {
    if (taken.has(seq)) continue;
    const hit = toHit(seq, topScore + 1, parts, "exact_reference");
    if (hit) {
      hits.push(hit);
      taken.add(seq);
    }
  }
}

/**
 * Overlays the scope's standing knowledge on the answer: the run's own active rules always (each missing one
 * replaces the lowest-ranked plain hit); lessons, and rules reaching the run from a wider scope, when they bear on
 * the query (they share a term with it or score at least half the top score); up to MAX_OVERLAYS in all, validated
 * lessons before pending ones. On a full page, a lesson takes the place of the lowest-ranked plain hit only when it
 * outscores it: lessons never displace better evidence; stale, quarantined and invalidated ones are never overlaid.
 */
export function overlayKnowledge(
  catalog: Catalog,
  hits: Hit[],
  taken: Set<number>,
  knowledge: readonly (readonly number[])[],
  accept: (seq: number) => boolean,
  scores: ReadonlyMap<number, Scored>,
  limit: number,
  toHit: ToHit,
  isHomeRun: (seq: number) => boolean,
): void {
  const budget = Math.min(MAX_OVERLAYS, Math.floor(limit / 3));
  if (budget === 0) return;
  const topScore = hits.find((h) => h.mode !== "exact_reference")?.score ?? 0;
  const overlays: { seq: number; score: number; type: "rule" | "lesson" }[] = [];
  // A run's global lessons are also in the owner's global lessons: consider each entry once.
  for (const seq of new Set(knowledge.flat())) {
    if (taken.has(seq) || catalog.isStale(seq) || catalog.isWithheld(seq) || !accept(seq)) continue;
    const type = catalog.entryType(seq);
    if (type !== "rule" && type !== "lesson") continue;
    const candidate = scores.get(seq);
    const relevant = candidate !== undefined && (candidate.parts.lexical > 0 || candidate.score >= 0.5 * topScore);
    if (!relevant && !(type === "rule" && isHomeRun(seq))) continue;
    overlays.push({ seq, score: (candidate?.score ?? 0) * (catalog.isValidated(seq) ? 2 : 1), type });
  }
  // Rules first (standing instructions), then lessons; each best-scored (validated first), then newest.
  overlays.sort((a, b) => (a.type === b.type ? b.score - a.score || b.seq - a.seq : a.type === "rule" ? -1 : 1));
  let added = 0;
  for (const overlay of overlays) {
    if (added >= budget) break;
    const parts = scores.get(overlay.seq)?.parts ?? NO_PARTS;
    const hit = toHit(overlay.seq, overlay.score, parts, overlay.type === "rule" ? "rule_overlay" : "lesson_overlay");
    // Untrusted knowledge is never standing guidance: it may rank as evidence, never be overlaid as a rule or lesson.
    if (hit === undefined || isUntrustedKnowledge(hit.entry)) continue;
    if (hits.length >= limit) {
      const replaceAt = findLastIndex(hits, (h) => h.mode === "semantic");
      if (replaceAt < 0) break;
      // Only the run's own rules are placed whatever their rank; a lesson (or a rule from a wider scope) displaces
      // the lowest-ranked plain hit only when it outscores it, so that it never pushes out better evidence — in a
      // run of many lessons that was the one entry matching the query, the only plain hit left in the page.
      const displaced = hits[replaceAt] as Hit;
      if (!(overlay.type === "rule" && isHomeRun(overlay.seq)) && displaced.score >= (scores.get(overlay.seq)?.score ?? 0)) continue;
      taken.delete(displaced.entry.seq);
      hits.splice(replaceAt, 1);
    }
    hits.push(hit);
    taken.add(overlay.seq);
    added++;
  }
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i] as T)) return i;
  return -1;
}
