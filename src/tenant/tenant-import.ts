// Imports a batch of export lines into one owner's memory: every line is parsed and checked first, embeddings are
// computed outside the transaction, then one durable transaction writes every line not imported before (with its
// entry in the import id map) or nothing at all; the in-memory indexes follow the commit.
import { Code, ConnectError } from "@connectrpc/connect";
import { atLine, LineFault } from "./import-faults.js";
import type { ImportIds } from "./import-ids.js";
import { parseLine } from "./line-format.js";
import type { ImportContext, ImportNode, TenantKind, Written } from "./tenant-kind.js";

/** Most lines one import call takes. */
export const MAX_IMPORT_LINES = 500;

export interface ImportResult {
  readonly imported: Record<string, number>;
  readonly unchanged: Record<string, number>;
}

/**
 * Runs the import's write transaction: the core data plane provides it, so that nodes written in it reach the node
 * index and subscribers in commit order like any core write.
 */
export type ImportTransaction = <T>(body: (importNode: ImportNode) => T) => Promise<T>;

interface Line {
  readonly index: number;
  readonly kind: TenantKind;
  readonly sourceId: string;
  readonly item: unknown;
}

/** A line that created a record, with what its kind's `committed` needs of it. */
interface Created {
  readonly line: Line;
  readonly stored: unknown;
}

export class TenantImporter {
  readonly #ids: ImportIds;
  readonly #kinds: ReadonlyMap<string, TenantKind>;
  readonly #transaction: ImportTransaction;

  constructor(ids: ImportIds, kinds: readonly TenantKind[], transaction: ImportTransaction) {
    this.#ids = ids;
    this.#kinds = new Map(kinds.map((k) => [k.kind, k]));
    this.#transaction = transaction;
  }

  async import(owner: number, texts: readonly string[], keyId = ""): Promise<ImportResult> {
    if (texts.length > MAX_IMPORT_LINES) {
      throw new ConnectError(`lines: at most ${MAX_IMPORT_LINES} lines per call, got ${texts.length}; send them in several calls`, Code.InvalidArgument);
    }
    const lines = this.#parse(owner, texts);
    // Lines imported before need no preparation; the transaction checks again, so a concurrent import is harmless.
    await this.#prepare(lines.filter((line) => this.#ids.get(owner, line.kind.kind, line.sourceId) === undefined));
    // Counted inside and returned: the transaction may run its body again, only the last run's writes kept.
    const { done, imported, unchanged } = await this.#transaction((importNode) => {
      const imported: Record<string, number> = {};
      const unchanged: Record<string, number> = {};
      const done: Created[] = [];
      const ctx = this.#context(owner, keyId, importNode);
      for (const line of lines) {
        const name = line.kind.kind;
        if (this.#ids.get(owner, name, line.sourceId) !== undefined) {
          unchanged[name] = (unchanged[name] ?? 0) + 1;
          continue;
        }
        let result: Written<unknown>;
        try {
          result = line.kind.write(ctx, line.item, line.sourceId);
        } catch (e: unknown) {
          throw atLine(line.index, e);
        }
        this.#ids.putInTransaction(owner, name, line.sourceId, result.id);
        if (result.existed) {
          unchanged[name] = (unchanged[name] ?? 0) + 1;
        } else {
          imported[name] = (imported[name] ?? 0) + 1;
          done.push({ line, stored: result.stored });
        }
      }
      return { done, imported, unchanged };
    });
    this.#committed(done);
    return { imported, unchanged };
  }

  #parse(owner: number, texts: readonly string[]): Line[] {
    const names = new Set(this.#kinds.keys());
    const lines: Line[] = [];
    texts.forEach((text, index) => {
      try {
        const parsed = parseLine(text, names);
        if (!("id" in parsed)) return;
        const kind = this.#kinds.get(parsed.kind) as TenantKind;
        lines.push({ index, kind, sourceId: parsed.id, item: kind.parse(owner, parsed.record) });
      } catch (e: unknown) {
        throw atLine(index, e);
      }
    });
    return lines;
  }

  async #prepare(lines: readonly Line[]): Promise<void> {
    for (const kind of this.#kinds.values()) {
      if (kind.prepare === undefined) continue;
      const items = lines.filter((line) => line.kind === kind).map((line) => line.item);
      if (items.length > 0) await kind.prepare(items);
    }
  }

  #committed(done: readonly Created[]): void {
    for (const kind of this.#kinds.values()) {
      if (kind.committed === undefined) continue;
      const stored = done.filter((d) => d.line.kind === kind).map((d) => d.stored);
      if (stored.length > 0) kind.committed(stored);
    }
  }

  #context(owner: number, keyId: string, importNode: ImportNode): ImportContext {
    const ids = this.#ids;
    return {
      owner,
      keyId,
      importNode,
      ref: (kind, sourceId) => ids.get(owner, kind, sourceId),
      requireRef: (kind, sourceId, field) => {
        const target = ids.get(owner, kind, sourceId);
        if (target === undefined) {
          throw new LineFault(field, `names ${kind} ${JSON.stringify(sourceId.slice(0, 64))}, which this import has not seen; import the lines of an export in their order`);
        }
        return target;
      },
      remember: (kind, sourceId, targetId) => ids.putInTransaction(owner, kind, sourceId, targetId),
    };
  }
}
