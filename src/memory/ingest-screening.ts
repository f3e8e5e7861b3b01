// Screens new entries before they are stored: flags instruction-like text (memory/instruction-detector.ts) and keeps
// untrusted lessons and rules from being stored as guidance (memory/evidence-trust.ts). The detector reads up to
// ~32k characters of each entry, so a request of many large items is screened in time slices.
import type { NewEntry } from "../storage/entry-record.js";
import { guardedKnowledge } from "./evidence-trust.js";
import { ingestFlags } from "./instruction-detector.js";
import { SLICE_MS, TimeSlicer } from "./scan.js";

/** An entry as it is stored: its ingest flags set, and, when untrusted knowledge, guarded. */
export function screenedEntry(entry: NewEntry): NewEntry {
  const found = ingestFlags(entry.content, entry.provenance.trust);
  // Nearly every entry: no flag found and none to merge, so nothing to copy.
  if (found.length === 0 && entry.flags.length === 0) return guardedKnowledge(entry);
  return guardedKnowledge({ ...entry, flags: [...new Set([...entry.flags, ...found])] });
}

/** `screenedEntry` of each item's entry, in order, yielding to the event loop every SLICE_MS. */
export async function screenEntries<T extends { readonly entry: NewEntry }>(items: readonly T[]): Promise<T[]> {
  // An entry can take the detector a few milliseconds: the clock is read after each one.
  const slicer = new TimeSlicer(SLICE_MS, 1);
  const out: T[] = [];
  for (const item of items) {
    const entry = screenedEntry(item.entry);
    out.push(entry === item.entry ? item : { ...item, entry });
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return out;
}
