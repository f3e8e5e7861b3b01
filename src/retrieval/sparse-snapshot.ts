// The lexical index's posting lists written to one file at a clean shutdown and read back at the next start-up, so
// that start-up need not decode every entry's stored terms (4.5 s of the 20 s a million entries took to be ready).
//
// The file is derived state, like the vector graphs: it is used only when its stamp matches the store (no entry
// written, changed or removed since it was written) and it is deleted as it is read, so a process that stops without
// a clean shutdown always prewarms from the stored terms. Layout: a magic line, a little-endian u32 header length,
// the JSON header (stamp, owners and their terms in order), padding to 4 bytes, then every list as the index holds it
// (`[length, maxTf, seq, tf, …]`, Int32, little-endian as typed arrays are on the machines we run on).
import fs from "node:fs";
import type { SparseIndex } from "./sparse-index.js";

const MAGIC = "ENGRAM-SPARSE-1\n";
/** Ints written at once: the file is assembled in 8 MiB pieces, never whole in memory. */
const CHUNK_INTS = 2 * 1024 * 1024;
/** Postings adopted between two yields of the event loop while a snapshot loads. */
const POSTINGS_PER_YIELD = 200_000;

/** What the store looked like when the snapshot was taken; any difference and the snapshot is not used. */
export interface SnapshotStamp {
  /** The store's count of vector changes and removals (entry updates and deletions move it). */
  readonly generation: number;
  /** The highest entry seq handed out. */
  readonly maxSeq: number;
  /** Stored term records (one per entry with terms). */
  readonly termRecords: number;
}

interface Header {
  readonly stamp: SnapshotStamp;
  readonly owners: { readonly owner: number; readonly terms: string[] }[];
}

/** Writes the index's lists to `file` (through a temporary file, synced, then renamed over it). */
export function writeSparseSnapshot(file: string, index: SparseIndex, stamp: SnapshotStamp): void {
  const owners = index.owners().map((owner) => ({ owner, terms: index.terms(owner) }));
  const header = Buffer.from(JSON.stringify({ stamp, owners } satisfies Header), "utf8");
  const prefix = Buffer.alloc(align4(MAGIC.length + 4 + header.length));
  prefix.write(MAGIC, 0, "latin1");
  prefix.writeUInt32LE(header.length, MAGIC.length);
  header.copy(prefix, MAGIC.length + 4);
  const temporary = `${file}.tmp`;
  const fd = fs.openSync(temporary, "w");
  try {
    fs.writeSync(fd, prefix);
    const chunk = new Int32Array(CHUNK_INTS);
    let used = 0;
    const flush = (): void => {
      fs.writeSync(fd, new Uint8Array(chunk.buffer, 0, used * 4));
      used = 0;
    };
    for (const { owner, terms } of owners) {
      for (const term of terms) {
        const list = index.list(owner, term) as Int32Array;
        if (used + list.length > CHUNK_INTS) flush();
        if (list.length > CHUNK_INTS) fs.writeSync(fd, new Uint8Array(list.buffer, list.byteOffset, list.byteLength));
        else {
          chunk.set(list, used);
          used += list.length;
        }
      }
    }
    flush();
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
}

/**
 * Fills an empty index from `file` when the snapshot was taken of the store as it is now (`stamp`), and reports
 * whether it did. The file is deleted first, whatever it holds. A file that does not parse, or that a later write
 * made stale, leaves the index empty: the caller prewarms from the stored terms.
 */
export async function readSparseSnapshot(file: string, index: SparseIndex, stamp: SnapshotStamp): Promise<boolean> {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch {
    return false;
  }
  fs.rmSync(file, { force: true });
  const parsed = parse(bytes);
  if (parsed === undefined || !sameStamp(parsed.header.stamp, stamp) || index.postingCount > 0) return false;
  const { header, data } = parsed;
  let at = 0;
  let sinceYield = 0;
  for (const { owner, terms } of header.owners) {
    for (const term of terms) {
      const length = data[at];
      if (length === undefined || length < 1 || at + 2 + 2 * length > data.length) return discard(index);
      if (!index.adopt(owner, term, data.subarray(at, at + 2 + 2 * length))) return discard(index);
      at += 2 + 2 * length;
      sinceYield += length;
      if (sinceYield >= POSTINGS_PER_YIELD) {
        sinceYield = 0;
        // Probes (and /livez) are answered while a large index loads.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  }
  return at === data.length ? true : discard(index);
}

function discard(index: SparseIndex): false {
  index.clear();
  return false;
}

function parse(bytes: Buffer): { header: Header; data: Int32Array } | undefined {
  if (bytes.length < MAGIC.length + 4 || bytes.toString("latin1", 0, MAGIC.length) !== MAGIC) return undefined;
  const headerLength = bytes.readUInt32LE(MAGIC.length);
  const start = align4(MAGIC.length + 4 + headerLength);
  if (start > bytes.length || (bytes.length - start) % 4 !== 0) return undefined;
  let header: unknown;
  try {
    header = JSON.parse(bytes.toString("utf8", MAGIC.length + 4, MAGIC.length + 4 + headerLength));
  } catch {
    return undefined;
  }
  if (!isHeader(header)) return undefined;
  // A copy on an aligned buffer: the file's bytes may start at any offset of Node's buffer pool.
  const data = new Int32Array((bytes.length - start) / 4);
  new Uint8Array(data.buffer).set(bytes.subarray(start));
  return { header, data };
}

function isHeader(value: unknown): value is Header {
  if (typeof value !== "object" || value === null) return false;
  const { stamp, owners } = value as Record<string, unknown>;
  if (typeof stamp !== "object" || stamp === null || !Array.isArray(owners)) return false;
  const s = stamp as Record<string, unknown>;
  if (![s["generation"], s["maxSeq"], s["termRecords"]].every((n) => typeof n === "number")) return false;
  return owners.every((o: unknown) => {
    if (typeof o !== "object" || o === null) return false;
    const { owner, terms } = o as Record<string, unknown>;
    return Number.isInteger(owner) && Array.isArray(terms) && terms.every((t) => typeof t === "string");
  });
}

const sameStamp = (a: SnapshotStamp, b: SnapshotStamp): boolean => a.generation === b.generation && a.maxSeq === b.maxSeq && a.termRecords === b.termRecords;

const align4 = (n: number): number => (n + 3) & ~3;
