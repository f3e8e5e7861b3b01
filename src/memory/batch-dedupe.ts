// BatchInsert's `deduplicate`: which of a batch's items repeat the text of a current entry of the same run, user and
// entry type. The run's entries are read in time slices (see scan.ts), so a large run never holds the event loop;
// entries of types no item has are skipped without being read.
import type { Catalog } from "../retrieval/catalog.js";
import { isStaleRecord, type EntryStore, type EntryType } from "../storage/entry-store.js";
import { TimeSlicer } from "./scan.js";

export interface DedupItem {
  readonly userId: string;
  readonly entryType: EntryType;
  readonly content: string;
}

export function dedupKey(item: DedupItem): string {
  return `${item.userId}\u0000${item.entryType}\u0000${item.content}`;
}

/** Id of the current entry of the owner's run that each of `items` repeats, by dedupKey; items repeating none are absent. */
export async function existingDuplicates(catalog: Catalog, entries: EntryStore, owner: number, runId: string, items: readonly DedupItem[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (items.length === 0) return found;
  const wanted = new Set(items.map(dedupKey));
  const types = new Set(items.map((item) => item.entryType));
  // A copy: the catalog's list changes as entries are written or deleted while the scan yields.
  const seqs = [...catalog.runSeqs(owner, runId)];
  const slicer = new TimeSlicer();
  for (const seq of seqs) {
    if (catalog.has(seq) && !catalog.isStale(seq) && types.has(catalog.entryType(seq))) {
      const entry = entries.get(seq);
      if (entry !== undefined && !isStaleRecord(entry)) {
        const key = dedupKey(entry);
        if (wanted.has(key)) found.set(key, entry.id);
      }
    }
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return found;
}
