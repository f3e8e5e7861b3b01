// What each imported line created, per owner: [owner, kind, source id] → the id in the owner's memory. Written in the
// import's transaction with the record, so a line imported again maps to the record it created the first time.
import type { Storage } from "../storage/database.js";

export class ImportIds {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /** The id the owner's import of this line created; undefined when never imported. */
  get(owner: number, kind: string, sourceId: string): string | undefined {
    const value = this.#storage.dbs.importIds.get([owner, kind, sourceId]);
    return typeof value === "string" ? value : undefined;
  }

  /** Call inside the import's write transaction. */
  putInTransaction(owner: number, kind: string, sourceId: string, targetId: string): void {
    this.#storage.dbs.importIds.put([owner, kind, sourceId], targetId);
  }
}
