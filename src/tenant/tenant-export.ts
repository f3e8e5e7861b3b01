// Pages of one owner's export: walks the record kinds in export order, reading a bounded number of keys per page and
// stopping after about 1 MiB of lines or a few milliseconds of work, so a page costs the same whatever the size of
// the memory.
import { performance } from "node:perf_hooks";
import { decodeExportCursor, encodeExportCursor } from "./export-cursor.js";
import { headerLine, recordLine } from "./line-format.js";
import type { KeySuffix, TenantKind } from "./tenant-kind.js";

export const DEFAULT_EXPORT_LIMIT = 500;
export const MAX_EXPORT_LIMIT = 1000;
/** A page ends once its lines reach this many bytes (a single larger record is still sent, alone). */
export const MAX_PAGE_BYTES = 1024 * 1024;
/**
 * A page ends after this much work, so that an export never holds the event loop for long, whatever the size of the
 * memory and of its records; the next page continues where it stopped.
 */
export const MAX_PAGE_MILLIS = 5;
/** Keys read per scan: the unit of work between two looks at the clock. */
const SCAN_CHUNK = 32;

export interface ExportPage {
  readonly lines: string[];
  /** "" after the last page. */
  readonly nextPageToken: string;
  /** Records of the page by kind. */
  readonly counts: Record<string, number>;
}

export class TenantExporter {
  readonly #kinds: readonly TenantKind[];
  readonly #names: readonly string[];
  readonly #embedderId: string;
  readonly #now: () => number;

  constructor(kinds: readonly TenantKind[], embedderId: string, now: () => number = Date.now) {
    this.#kinds = kinds;
    this.#names = kinds.map((k) => k.kind);
    this.#embedderId = embedderId;
    this.#now = now;
  }

  /** One page; `limit` is already clamped. INVALID_ARGUMENT naming page_token when the token is malformed. */
  page(owner: number, pageToken: string, limit: number): ExportPage {
    const lines: string[] = [];
    const counts: Record<string, number> = {};
    let bytes = 0;
    let at = 0;
    let after: KeySuffix | undefined;
    if (pageToken === "") {
      lines.push(headerLine(this.#embedderId, this.#now()));
    } else {
      const cursor = decodeExportCursor(pageToken, this.#names);
      at = this.#names.indexOf(cursor.kind);
      after = cursor.after;
    }
    const started = performance.now();
    const full = (): boolean => bytes >= MAX_PAGE_BYTES || performance.now() - started >= MAX_PAGE_MILLIS;
    // Keys read, skipped ones included: what bounds the page's work.
    let budget = limit;
    while (at < this.#kinds.length && budget > 0 && !full()) {
      const kind = this.#kinds[at] as TenantKind;
      const asked = Math.min(budget, SCAN_CHUNK);
      const scanned = kind.scan(owner, after, asked);
      budget -= scanned.length;
      let filled = false;
      for (const { key, line } of scanned) {
        after = key;
        if (line === undefined) continue;
        const text = recordLine(kind.kind, line.id, line.record);
        lines.push(text);
        counts[kind.kind] = (counts[kind.kind] ?? 0) + 1;
        bytes += Buffer.byteLength(text) + 1;
        filled = bytes >= MAX_PAGE_BYTES;
        if (filled) break;
      }
      if (filled) break;
      // Fewer keys than asked for: the kind is exhausted.
      if (scanned.length < asked) {
        at++;
        after = undefined;
      }
    }
    const nextPageToken = at < this.#kinds.length ? encodeExportCursor({ kind: (this.#kinds[at] as TenantKind).kind, after }) : "";
    return { lines, nextPageToken, counts };
  }
}
