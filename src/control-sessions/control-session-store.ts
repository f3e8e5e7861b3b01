// Control session records in LMDB (one per owner and run), the transient `closing` phase of closes in progress, and
// what a session reports about its run's window of entries (how many, the latest).
import type { Storage } from "../storage/database.js";
import type { EntryStore } from "../storage/entry-store.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import {
  CONTROL_SESSION_RECORD_VERSION,
  controlSessionKey,
  decodeControlSession,
  type ControlSessionPhase,
  type ControlSessionRecord,
} from "./control-session-record.js";
import { prefixRange } from "../storage/key-range.js";

export interface SessionWindow {
  /** Entries of the run written inside the session's window and still stored. */
  readonly ingestCount: number;
  /** Creation time (ms) of the latest of them; undefined when there is none. */
  readonly lastActivityAt: number | undefined;
}

export class ControlSessionStore {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  /** `${owner}\n${runId}` of the sessions whose close is in progress in this process. */
  readonly #closing = new Set<string>();

  constructor(storage: Storage, entries: EntryStore) {
    this.#storage = storage;
    this.#entries = entries;
    // Data written by a newer build stops start-up here rather than failing one request at a time.
    checkVersions("control_sessions", storage.dbs.controlSessions, CONTROL_SESSION_RECORD_VERSION);
  }

  get(owner: number, runId: string): ControlSessionRecord | undefined {
    const key = controlSessionKey(owner, runId);
    return decodeOptional(this.#storage.dbs.controlSessions.get(key), (value) => decodeControlSession(key, value));
  }

  /** Call inside a write transaction. */
  putInTransaction(record: ControlSessionRecord): void {
    this.#storage.dbs.controlSessions.put(controlSessionKey(record.owner, record.runId), record);
    if (record.projectId !== "") this.#storage.dbs.controlSessionsByProject.put([record.owner, record.projectId, record.runId], null);
  }

  /** Runs whose control session names the project, in run id order, at most `limit`. */
  runsOfProject(owner: number, projectId: string, limit: number): string[] {
    const keys = this.#storage.dbs.controlSessionsByProject.getKeys({ ...prefixRange([owner, projectId]), limit });
    return [...keys].map((key) => (key as [number, string, string])[2]);
  }

  /**
   * Removes the run's control session, if any; call inside the write transaction that deletes the run (DeleteRun).
   * Returns whether there was one.
   */
  removeInTransaction(owner: number, runId: string): boolean {
    const key = controlSessionKey(owner, runId);
    const record = this.get(owner, runId);
    if (record === undefined) return false;
    this.#storage.dbs.controlSessions.remove(key);
    if (record.projectId !== "") this.#storage.dbs.controlSessionsByProject.remove([owner, record.projectId, runId]);
    return true;
  }

  /** The phase a reader sees: `closing` while a close of it runs here, else the stored one; undefined when none. */
  phaseOf(owner: number, runId: string): ControlSessionPhase | undefined {
    if (this.#closing.has(closingKey(owner, runId))) return "closing";
    return this.get(owner, runId)?.phase;
  }

  /** Whether the owner's run has a control session that is closing or closed: memory writes into it are refused. */
  isClosedRun(owner: number, runId: string): boolean {
    const phase = this.phaseOf(owner, runId);
    return phase === "closing" || phase === "closed";
  }

  /** Marks a close as begun; false when one is already in progress. `endClosing` must follow. */
  beginClosing(owner: number, runId: string): boolean {
    const key = closingKey(owner, runId);
    if (this.#closing.has(key)) return false;
    this.#closing.add(key);
    return true;
  }

  endClosing(owner: number, runId: string): void {
    this.#closing.delete(closingKey(owner, runId));
  }

  /**
   * The session's entries: those of the run with a seq in (startSeq, endSeq], endSeq unbounded while active. Counted
   * by LMDB over the run index (no JavaScript loop over the entries).
   */
  window(record: ControlSessionRecord): SessionWindow {
    const { owner, runId, startSeq } = record;
    const endSeq = record.phase === "closed" ? record.endSeq : Infinity;
    const ingestCount = this.#storage.dbs.entriesByOwnerRun.getKeysCount({ start: [owner, runId, startSeq + 1], end: [owner, runId, endSeq + 1] });
    let lastActivityAt: number | undefined;
    for (const seq of this.#entries.visibleSeqs(owner, runId, true, endSeq + 1)) {
      if (seq > startSeq) lastActivityAt = this.#entries.get(seq)?.createdAt;
      break;
    }
    return { ingestCount, lastActivityAt };
  }
}

function closingKey(owner: number, runId: string): string {
  return `${owner}\n${runId}`;
}
