// Compaction: a compacting copy of the LMDB environment, made while writes are held back (they wait and none is
// lost), verified, then swapped in for the live data file. One at a time; the finish time is kept in `meta`.
import type { Logger } from "../platform/logger.js";
import type { Storage } from "./database.js";

/** `meta` key of the RFC 3339 time the last compaction finished. */
export const LAST_COMPACTION_KEY = "last_compaction_at";

export interface CompactionResult {
  readonly sizeBeforeBytes: number;
  readonly sizeAfterBytes: number;
  /** RFC 3339. */
  readonly finishedAt: string;
}

export type CompactionStart =
  | { readonly started: false; readonly sizeBeforeBytes: number }
  | { readonly started: true; readonly sizeBeforeBytes: number; readonly done: Promise<CompactionResult> };

export class Compactor {
  readonly #storage: Storage;
  readonly #logger: Logger;
  #running: Promise<CompactionResult> | undefined;

  constructor(storage: Storage, logger: Logger) {
    this.#storage = storage;
    this.#logger = logger;
  }

  get running(): boolean {
    return this.#running !== undefined;
  }

  /** RFC 3339 time the last compaction of this store finished; "" when none has. */
  lastCompactionAt(): string {
    const value = this.#storage.dbs.meta.get(LAST_COMPACTION_KEY);
    return typeof value === "string" ? value : "";
  }

  /**
   * Starts a compaction unless one is running. `done` settles when it has finished (or failed: the live environment
   * is then left as it was); nobody needs to await it, failures are logged.
   */
  start(): CompactionStart {
    const sizeBeforeBytes = this.#storage.dataFileBytes();
    if (this.#running !== undefined) return { started: false, sizeBeforeBytes };
    const started = Date.now();
    const done = this.#compact().then(
      (result) => {
        this.#logger.info({ size_before: result.sizeBeforeBytes, size_after: result.sizeAfterBytes, ms: Date.now() - started }, "storage compacted");
        return result;
      },
      (e: unknown) => {
        this.#logger.error({ err: e }, "storage compaction failed");
        throw e;
      },
    );
    this.#running = done;
    void done.then(
      () => (this.#running = undefined),
      () => (this.#running = undefined),
    );
    return { started: true, sizeBeforeBytes, done };
  }

  /** Resolves once no compaction runs (shutdown waits for one started in the background). */
  async idle(): Promise<void> {
    await this.#running?.catch(() => undefined);
  }

  #compact(): Promise<CompactionResult> {
    return this.#storage.exclusive(async (access) => {
      const sizeBeforeBytes = this.#storage.dataFileBytes();
      // MDB_CP_COMPACT: copies only pages in use, renumbered, so the free pages left by deletes are dropped.
      await access.root.backup(access.stagingDir, true);
      await access.swapInStaged();
      const finishedAt = new Date().toISOString();
      access.writeSync(() => this.#storage.dbs.meta.put(LAST_COMPACTION_KEY, finishedAt));
      return { sizeBeforeBytes, sizeAfterBytes: this.#storage.dataFileBytes(), finishedAt };
    });
  }
}
