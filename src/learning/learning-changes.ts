// Stores what an event taught about an entry (reflection merges, outcomes, promotion decisions) inside the caller's
// transaction, then, once committed, makes it searchable and announces it: the lesson's change and every promotion
// move go on the control event stream of the lesson's owner.
import type { EventBus } from "../events/event-bus.js";
import type { MemoryIndex } from "../memory/memory-index.js";
import type { ChangeAttribution, EntryPatch, EntryStore, Reindex, UpdatedEntry } from "../storage/entry-store.js";
import type { EntryAuditEvent } from "../storage/entry-record.js";
import { promotionAudit, type Learned, type PromotionMove } from "./reinforcement.js";
import { evidenceTrust } from "../memory/evidence-trust.js";

/** The audit `to` of a promotion withheld from untrusted knowledge. */
const WITHHELD = "withheld";

export interface AppliedLearning {
  readonly updated: UpdatedEntry;
  readonly moves: readonly PromotionMove[];
  readonly by: ChangeAttribution;
  /** New postings and vector when the lesson's situations changed. */
  readonly reindex?: Reindex | undefined;
}

export class LearningChanges {
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #events: EventBus;

  constructor(entries: EntryStore, index: MemoryIndex, events: EventBus) {
    this.#entries = entries;
    this.#index = index;
    this.#events = events;
  }

  /**
   * Writes an entry's new learning, confidence, scope (a promotion) and any other patch fields, with its promotion
   * moves in the audit trail. Call inside a write transaction; undefined when the entry no longer exists.
   */
  applyInTransaction(
    seq: number,
    learned: Learned,
    by: ChangeAttribution,
    extra: EntryPatch = {},
    now = Date.now(),
    reindex?: Reindex,
    audit: readonly EntryAuditEvent[] = [],
  ): AppliedLearning | undefined {
    const patch: EntryPatch = { learning: learned.learning, confidence: learned.confidence, lessonScope: learned.lessonScope, ...(learned.provenance === undefined ? {} : { provenance: learned.provenance }), ...(learned.flags === undefined ? {} : { flags: learned.flags }), ...extra };
    const updated = this.#entries.updateInTransaction(seq, patch, by, reindex, now, [...promotionAudit(learned.moves, now, by.agentId), ...this.#trustAudit(seq, learned, now, by.agentId), ...audit]);
    return updated === undefined ? undefined : { updated, moves: learned.moves, by, reindex };
  }

  /**
   * The audit events of a change of trust (`trust`: untrusted → trusted, with why) and of a promotion withheld from
   * untrusted knowledge (`promotion`: none → withheld), the latter recorded once per lesson.
   */
  #trustAudit(seq: number, learned: Learned, at: number, agentId: string): EntryAuditEvent[] {
    const events: EntryAuditEvent[] = [];
    const current = learned.provenance === undefined && learned.withheld === undefined ? undefined : this.#entries.get(seq);
    if (current === undefined) return events;
    if (learned.provenance !== undefined) {
      const from = evidenceTrust(current);
      const to = evidenceTrust({ provenance: learned.provenance, flags: learned.flags ?? current.flags });
      if (from !== to) events.push({ at, field: "trust", from, to, reason: learned.trustReason ?? "", agentId });
    }
    if (learned.withheld !== undefined && !current.audit.some((e) => e.field === "promotion" && e.to === WITHHELD)) {
      events.push({ at, field: "promotion", from: "none", to: WITHHELD, reason: learned.withheld, agentId });
    }
    return events;
  }

  /** After the commit: the catalog takes the new weights and scopes, and the changes are announced. */
  committed(applied: readonly (AppliedLearning | undefined)[], cause: string): void {
    for (const change of applied) {
      if (change === undefined) continue;
      const { updated, moves, by, reindex } = change;
      const record = updated.after;
      this.#index.indexUpdated(updated, reindex);
      if (updated.changed.length > 0) {
        this.#events.publish({
          type: record.entryType === "lesson" || record.entryType === "rule" ? "lesson.updated" : "entry.updated",
          owner: record.owner,
          runId: record.runId,
          agentId: by.agentId,
          payload: JSON.stringify({ entry_id: record.id, changed_fields: updated.changed, cause, confidence: record.confidence }),
        });
      }
      for (const move of moves) {
        this.#events.publish({
          type: move.to === "proposed" ? "lesson.promotion.proposed" : move.to === "accepted" || move.to === "refused" ? "lesson.promotion.resolved" : "lesson.promotion.changed",
          owner: record.owner,
          runId: record.runId,
          agentId: by.agentId,
          payload: JSON.stringify({
            lesson_id: record.id,
            from: move.from,
            to: move.to,
            target_scope: move.targetScope,
            scope: record.lessonScope,
            reason: move.reason,
          }),
        });
      }
    }
  }
}
