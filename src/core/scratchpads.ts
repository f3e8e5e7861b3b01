// Scratchpad writes and reads for a caller: applied at once (announced as `memory.added` after the commit), or
// staged in a transactional session and seen only through it until the session commits.
import type { Principal } from "../auth/principal.js";
import type { Storage } from "../storage/database.js";
import type { CoreCommitter } from "./core-commit.js";
import type { ScratchpadRecord } from "./scratchpad-record.js";
import { selectEntries, type ScratchpadFilter, type ScratchpadStore, type ScratchpadWrite } from "./scratchpad-store.js";
import type { StagedOps } from "./session-record.js";
import type { SessionStore } from "./session-store.js";

export class Scratchpads {
  readonly #storage: Storage;
  readonly #store: ScratchpadStore;
  readonly #sessions: SessionStore;
  readonly #committer: CoreCommitter;

  constructor(storage: Storage, store: ScratchpadStore, sessions: SessionStore, committer: CoreCommitter) {
    this.#storage = storage;
    this.#store = store;
    this.#sessions = sessions;
    this.#committer = committer;
  }

  /** Writes an entry, or stages it in `txnSessionId` when not "". Resolves the entry as written (or staged). */
  async write(caller: Principal, write: ScratchpadWrite, txnSessionId: string): Promise<ScratchpadRecord> {
    const owner = caller.userId;
    if (txnSessionId === "") {
      return this.#committer.commit((changes) => {
        const entry = this.#store.writeInTransaction(owner, write, Date.now());
        changes.push({ kind: "memory.added", owner, entry });
        return entry;
      });
    }
    return this.#storage.transaction(() => {
      const chain = this.#sessions.chain(caller, "txn_session_id", txnSessionId);
      const id = this.#store.nextIdInTransaction();
      (chain.staged[0] as StagedOps).fold({ kind: "scratchpad", id, write, stagedAt: Date.now() });
      this.#sessions.putInTransaction({ ...chain.leaf, ops: (chain.staged[0] as StagedOps).ops });
      const seen = chain.scratchpad(write.sessionId, this.#store.entries(caller, write.sessionId));
      return seen.find((e) => e.id === id) as ScratchpadRecord;
    });
  }

  /** Live entries of a scratchpad, oldest first; through `txnSessionId`'s staged writes when not "". */
  read(caller: Principal, sessionId: string, filter: ScratchpadFilter, txnSessionId: string): ScratchpadRecord[] {
    // The session is reached first, so an unknown `txn_session_id` fails the same way whatever the scratchpad holds.
    const chain = txnSessionId === "" ? undefined : this.#sessions.chain(caller, "txn_session_id", txnSessionId);
    const stored = this.#store.entries(caller, sessionId);
    const entries = chain === undefined ? stored : chain.scratchpad(sessionId, stored);
    return selectEntries(entries, filter, Date.now());
  }

  clear(caller: Principal, sessionId: string): Promise<number> {
    return this.#store.clear(caller, sessionId);
  }
}
