// Updates and deletes of single entries: one durable transaction for the record and everything stored with it,
// then the in-memory indexes and the event stream, so the very next request sees the change and a failure leaves
// nothing behind.
import type { EventBus } from "../events/event-bus.js";
import type { Storage } from "../storage/database.js";
import type { ChangeAttribution, DeletedEntry, EntryPatch, EntryRecord, EntryStore, Reindex, UpdatedEntry } from "../storage/entry-store.js";
import type { EntryAuditEvent } from "../storage/entry-record.js";
import type { MemoryIndex } from "./memory-index.js";

/** Turns a requested patch into the one stored, from the entry as it is inside the write transaction. */
export type EntryEditor = (current: EntryRecord, requested: EntryPatch, at: number, agentId: string) => { readonly patch: EntryPatch; readonly audit: readonly EntryAuditEvent[] };

export class EntryChanges {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #events: EventBus;

  constructor(storage: Storage, entries: EntryStore, index: MemoryIndex, events: EventBus) {
    this.#storage = storage;
    this.#entries = entries;
    this.#index = index;
    this.#events = events;
  }

  /**
   * Changes an entry; a new content is re-embedded and re-indexed. `edit`, when given, turns the requested patch into
   * the one stored (and audit events to add), from the entry as the write transaction reads it (see
   * learning/lesson-edit.ts). Undefined when the entry does not exist.
   */
  async update(seq: number, patch: EntryPatch, by: ChangeAttribution, edit?: EntryEditor): Promise<UpdatedEntry | undefined> {
    const current = this.#entries.get(seq);
    if (current === undefined) return undefined;
    let reindex: Reindex | undefined;
    if (patch.content !== undefined && patch.content !== current.content) {
      // A lesson keeps being found by its situations under its new wording.
      reindex = await this.#index.reindexOf({ ...current, content: patch.content, metadataJson: patch.metadataJson ?? current.metadataJson });
    }
    const updated = await this.#storage.transaction(() => {
      if (edit === undefined) return this.#entries.updateInTransaction(seq, patch, by, reindex);
      const now = this.#entries.expiry.now();
      const before = this.#entries.get(seq);
      if (before === undefined) return undefined;
      const edited = edit(before, patch, now, by.agentId);
      return this.#entries.updateInTransaction(seq, edited.patch, by, reindex, now, edited.audit);
    });
    if (updated === undefined || updated.after === updated.before) return updated;
    this.#index.indexUpdated(updated, reindex);
    if (updated.changed.length === 0) return updated;
    this.#events.publish({
      type: isKnowledge(updated.after) ? "lesson.updated" : "entry.updated",
      owner: updated.after.owner,
      runId: updated.after.runId,
      agentId: by.agentId,
      payload: JSON.stringify({ entry_id: updated.after.id, changed_fields: updated.changed, reason: by.reason }),
    });
    return updated;
  }

  /** Deletes an entry and its index data; entries derived from it are marked for review. */
  async delete(seq: number, by: ChangeAttribution): Promise<DeletedEntry | undefined> {
    const current = this.#entries.get(seq);
    if (current === undefined) return undefined;
    const [deleted] = await this.deleteAll([seq], by);
    return deleted;
  }

  /**
   * Deletes entries in one transaction, as `delete` deletes one; those gone meanwhile are skipped. Callers keep the
   * list short (a slice): the transaction holds the event loop for about 0.15 ms per entry.
   */
  async deleteAll(seqs: readonly number[], by: ChangeAttribution): Promise<DeletedEntry[]> {
    const deleted = await this.#storage.transaction(() => seqs.flatMap((seq) => this.#entries.deleteInTransaction(seq) ?? []));
    for (const { record, termFreqs, flagged } of deleted) {
      this.#index.unindex(record.seq, record.owner, termFreqs);
      for (const marked of flagged) this.#index.catalog.replace(marked);
      this.#events.publish({
        type: isKnowledge(record) ? "lesson.deleted" : "entry.deleted",
        owner: record.owner,
        runId: record.runId,
        agentId: by.agentId,
        payload: JSON.stringify({ entry_id: record.id, flagged_for_review: flagged.map((e) => e.id), reason: by.reason }),
      });
    }
    return deleted;
  }
}

/** Lessons and rules are announced as lessons. */
function isKnowledge(record: EntryRecord): boolean {
  return record.entryType === "lesson" || record.entryType === "rule";
}
