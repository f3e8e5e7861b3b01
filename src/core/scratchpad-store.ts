// Scratchpads in LMDB under [owner, session_id, seq]: keyed entries replace their predecessor, expired entries are
// hidden from reads and dropped on the next write to the same scratchpad. Reads and clears take the caller and cover
// only the caller's key range, so another user's scratchpad of the same id is simply empty to them.
import type { Key } from "lmdb";
import type { Principal } from "../auth/principal.js";
import type { Storage } from "../storage/database.js";
import { nextSequence } from "../storage/database.js";
import { checkVersions, type RecordReader } from "../storage/record-codec.js";
import { decodeScratchpadEntry, isLive, readScratchpadContent, SCRATCHPAD_RECORD_VERSION, scratchpadIdOf, type ScratchpadRecord } from "./scratchpad-record.js";

/** What a writer supplies; the store assigns the id (unless staged earlier), the time and the expiry. */
export interface ScratchpadWrite {
  readonly sessionId: string;
  readonly agentId: string;
  readonly key: string;
  readonly content: string;
  readonly entryJson: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** 0: never expires. */
  readonly ttlMs: number;
}

/** A write as staged inside a core session record. */
export function readScratchpadWrite(r: RecordReader): ScratchpadWrite {
  return { ...readScratchpadContent(r), ttlMs: r.number("ttlMs") };
}

export interface ScratchpadFilter {
  readonly afterTimestamp: number;
  readonly key: string;
  readonly agentId: string;
  readonly limit: number;
}

export class ScratchpadStore {
  readonly #storage: Storage;

  /** Opens the store; throws RecordVersionError when an entry was written by another schema version. */
  constructor(storage: Storage) {
    this.#storage = storage;
    checkVersions("core_scratchpad", storage.dbs.scratchpad, SCRATCHPAD_RECORD_VERSION);
  }

  #range(owner: number, sessionId: string): { start: Key; end: Key } {
    return { start: [owner, sessionId], end: [owner, sessionId, Number.MAX_SAFE_INTEGER + 1] };
  }

  /** Every stored entry of the caller's scratchpad, expired ones included, oldest first. */
  entries(caller: Principal, sessionId: string): ScratchpadRecord[] {
    return [...this.#storage.dbs.scratchpad.getRange(this.#range(caller.userId, sessionId))].map(({ key, value }) => decodeScratchpadEntry(key, value));
  }

  /** A fresh entry id from the shared sequence (also used when a write is staged in a session). */
  nextIdInTransaction(): string {
    return scratchpadIdOf(nextSequence(this.#storage.dbs.meta, "scratchpad"));
  }

  /**
   * Writes one entry of `owner` (the caller, or the owner of the session being committed) inside the caller's
   * transaction: drops the scratchpad's expired entries and the entry with the
   * same key, then appends. `id` keeps the id given when the write was staged.
   */
  writeInTransaction(owner: number, write: ScratchpadWrite, now: number, id?: string): ScratchpadRecord {
    const { dbs } = this.#storage;
    let last = 0;
    const drop: Key[] = [];
    for (const { key, value } of dbs.scratchpad.getRange(this.#range(owner, write.sessionId))) {
      const entry = decodeScratchpadEntry(key, value);
      last = Math.max(last, entry.timestamp);
      if (!isLive(entry, now) || (write.key !== "" && entry.key === write.key)) drop.push(key);
    }
    for (const key of drop) dbs.scratchpad.remove(key);
    const seq = nextSequence(dbs.meta, "scratchpad");
    const timestamp = Math.max(now, last + 1);
    const record: ScratchpadRecord = {
      v: SCRATCHPAD_RECORD_VERSION,
      id: id ?? scratchpadIdOf(seq),
      sessionId: write.sessionId,
      agentId: write.agentId,
      key: write.key,
      content: write.content,
      entryJson: write.entryJson,
      metadata: write.metadata,
      timestamp,
      expiresAt: write.ttlMs > 0 ? timestamp + write.ttlMs : 0,
    };
    dbs.scratchpad.put([owner, write.sessionId, seq], record);
    return record;
  }

  /** Deletes every entry of the caller's scratchpad; resolves how many there were. */
  async clear(caller: Principal, sessionId: string): Promise<number> {
    return this.#storage.transaction(() => {
      const keys = [...this.#storage.dbs.scratchpad.getKeys(this.#range(caller.userId, sessionId))];
      for (const key of keys) this.#storage.dbs.scratchpad.remove(key);
      return keys.length;
    });
  }
}

/** Live entries passing the filter, oldest first, at most `limit`. */
export function selectEntries(entries: readonly ScratchpadRecord[], filter: ScratchpadFilter, now: number): ScratchpadRecord[] {
  const selected: ScratchpadRecord[] = [];
  for (const entry of entries) {
    if (!isLive(entry, now) || entry.timestamp <= filter.afterTimestamp) continue;
    if (filter.key !== "" && entry.key !== filter.key) continue;
    if (filter.agentId !== "" && entry.agentId !== filter.agentId) continue;
    selected.push(entry);
    if (selected.length >= filter.limit) break;
  }
  return selected;
}
