// The contract every exported record kind fulfils: scan one owner's records in key order (export), parse a line's
// record, write it inside the import transaction and index it after the commit (import).
import type { Database as LmdbDatabase, Key } from "lmdb";
import type { NodeRecord } from "../core/node-record.js";

/** An LMDB key without its leading owner: where an export page resumes. Only strings and numbers. */
export type KeySuffix = readonly (string | number)[];

/** One key an export scan read, with its line's content unless the record is skipped (e.g. of a run being deleted). */
export interface Scanned {
  readonly key: KeySuffix;
  readonly line?: { readonly id: string; readonly record: Readonly<Record<string, unknown>> };
}

/** Stores a core node under a fresh id, in the import's transaction; the node index follows the commit. */
export type ImportNode = (node: Omit<NodeRecord, "v" | "id">, vector: Float32Array) => NodeRecord;

/** What a record kind's importer may use while it writes, inside the import's one transaction. */
export interface ImportContext {
  readonly owner: number;
  /** API key that imports: what the imported records record as their writer (entries' provenance `keyId`). */
  readonly keyId: string;
  readonly importNode: ImportNode;
  /** The id a line of `kind` with this source id created in the owner's memory (this or an earlier import). */
  ref(kind: string, sourceId: string): string | undefined;
  /** Like `ref`, but when the kind may name it and it has not been imported: a fault naming `field`. */
  requireRef(kind: string, sourceId: string, field: string): string;
  /** Records a mapping besides the line's own (e.g. an entry's reference id), in the same transaction. */
  remember(kind: string, sourceId: string, targetId: string): void;
}

/**
 * One record kind of the export. `S` is the kind's parsed line, `C` what `committed` needs of a record `write`
 * created; the importer hands each back to the kind that made it (methods, so a kind of any `S` and `C` fits the
 * list of kinds).
 */
export interface TenantKind<S = unknown, C = unknown> {
  /** The line's `kind`, e.g. `entry`. */
  readonly kind: string;
  /** Up to `limit` keys of `owner`'s records after `after` (from the start when undefined), in key order. */
  scan(owner: number, after: KeySuffix | undefined, limit: number): Scanned[];
  /** Checks a line's record (the owner set to the importer), throwing RecordDecodeError or LineFault on a misfit. */
  parse(owner: number, record: Readonly<Record<string, unknown>>): S;
  /** Work before the transaction (embedding), for the lines not imported yet, all at once. */
  prepare?(items: readonly S[]): Promise<void>;
  /**
   * Inside the transaction: stores the record, or finds the same one stored already; its id in the owner's memory.
   * Changes nothing in memory, the line included: the transaction may run it again, only the last run's writes kept.
   */
  write(ctx: ImportContext, item: S, sourceId: string): Written<C>;
  /** After the commit: makes the created records visible to what indexes them in memory, from what `write` returned. */
  committed?(stored: readonly C[]): void;
}

/** What an import line led to: a record it created, or the identical record the owner already had. */
export interface Written<C = never> {
  readonly id: string;
  readonly existed: boolean;
  /** Of a created record: what the kind's `committed` needs of it. */
  readonly stored?: C;
}

export function created(id: string): Written {
  return { id, existed: false };
}

export function alreadyStored(id: string): Written {
  return { id, existed: true };
}

/**
 * Up to `limit` keys (with values) of an owner-first database after `after`, in key order. Reads a page at once, so
 * callers never hold an iterator across an await.
 */
export function ownerPage<V>(db: LmdbDatabase<V, Key>, owner: number, after: KeySuffix | undefined, limit: number): { suffix: KeySuffix; key: Key; value: V }[] {
  const range = { start: [owner, ...(after ?? [])], end: [owner + 1], exclusiveStart: after !== undefined, limit };
  const page: { suffix: KeySuffix; key: Key; value: V }[] = [];
  for (const { key, value } of db.getRange(range)) page.push({ suffix: suffixOf(key), key, value });
  return page;
}

/** A stored owner-first key without its owner. */
export function suffixOf(key: Key): KeySuffix {
  const parts = Array.isArray(key) ? (key as unknown[]).slice(1) : [];
  return parts.map((part) => (typeof part === "number" ? part : String(part)));
}

/** The line id of a record keyed by names the caller chose: the JSON array of those names. */
export function keyId(parts: KeySuffix): string {
  return JSON.stringify(parts);
}

/** A record for a line: the stored record without its owner (an import writes into the importer's memory). */
export function withoutOwner(record: object): Record<string, unknown> {
  const { owner: _owner, ...rest } = record as Record<string, unknown>;
  return rest;
}
