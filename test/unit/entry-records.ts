// Entry records built in memory, as the store would hand them to the catalog and indexes (unit tests).
import { ENTRY_RECORD_VERSION, entryIdOf, initialLearning, newEntry, type EntryRecord, type NewEntry } from "../../src/storage/entry-store.js";

/** A stored fact of `owner` in `runId` with seq `seq`; `fields` override anything. */
export function entryRecord(seq: number, fields: Pick<NewEntry, "owner" | "runId" | "content"> & Partial<EntryRecord>): EntryRecord {
  return {
    ...newEntry({ entryType: "fact", occurrenceTime: 1_700_000_000 + seq, ...fields }),
    v: ENTRY_RECORD_VERSION,
    seq,
    id: entryIdOf(seq),
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    supersededBy: "",
    stale: false,
    referenceId: "",
    validationStatus: "",
    lineageReview: "",
    audit: [],
    learning: initialLearning(1, fields.runId),
    termCount: fields.content.split(" ").length,
    ...fields,
  };
}
