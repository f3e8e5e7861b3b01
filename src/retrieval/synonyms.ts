// Words that mean the same or nearly, offline: WordNet 3.1's synonyms and related forms, by index term (a word as
// retrieval indexes it: lowercased, stemmed — see text.ts). Two wordings of one thing share few words ("the primary
// refuses the transfer" / "xfrin rejected by the master"); knowing that refuse ~ reject and primary ~ master lets a
// comparison credit them, below an exact match. The table (assets/synonyms/, derived by scripts/derive-synonyms.mjs)
// is read once, kept as its bytes (~1.6 MB) and searched in place: a lookup is a binary search, its answer cached.
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { LRUCache } from "lru-cache";

/** Where the table lives relative to the project root; scripts/derive-synonyms.mjs documents its format. */
export const SYNONYMS_ASSET = "assets/synonyms/wordnet-terms.tsv";

const FORMAT = "engram-synonyms 1 ";
const NEWLINE = 0x0a;
const TAB = 0x09;
/** Terms whose relatives are kept decoded. */
const CACHED_TERMS = 20_000;

/** The relatives of an index term. */
export interface Relatives {
  /** Terms of words sharing a sense with it (refuse → reject, decline). */
  readonly synonyms: readonly string[];
  /** Terms of its derived and related forms (permission → permit, expire → expiry). */
  readonly related: readonly string[];
}

const NONE: Relatives = { synonyms: [], related: [] };

/** Finds the table above this module: src/retrieval when run from source, dist/src/retrieval when compiled. */
function defaultAssetPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, SYNONYMS_ASSET);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`synonym table not found: no ${SYNONYMS_ASSET} above ${here}`);
  }
}

export class Synonyms {
  /** A table without entries: nothing has relatives. */
  static readonly EMPTY = new Synonyms(new Uint8Array(0), new Uint32Array(0));

  readonly #bytes: Uint8Array;
  /** Byte offset of each entry line, in term order. */
  readonly #lines: Uint32Array;
  readonly #cache = new LRUCache<string, Relatives>({ max: CACHED_TERMS });
  readonly #decoder = new TextDecoder();

  private constructor(bytes: Uint8Array, lines: Uint32Array) {
    this.#bytes = bytes;
    this.#lines = lines;
  }

  /** Reads the table (`file` defaults to the committed asset); a few milliseconds. */
  static async load(file: string = defaultAssetPath()): Promise<Synonyms> {
    return Synonyms.parse(await readFile(file));
  }

  /** A table from its bytes; throws on another format. */
  static parse(bytes: Uint8Array): Synonyms {
    const headerEnd = bytes.indexOf(NEWLINE);
    const header = new TextDecoder().decode(bytes.subarray(0, headerEnd < 0 ? 0 : headerEnd));
    if (!header.startsWith(FORMAT)) throw new Error(`invalid synonym table: header "${header.slice(0, 60)}"`);
    let count = 0;
    for (let i = headerEnd + 1; i < bytes.length; i++) if (bytes[i] === NEWLINE) count++;
    const lines = new Uint32Array(count);
    let line = 0;
    let start = headerEnd + 1;
    for (let i = start; i < bytes.length && line < count; i++) {
      if (bytes[i] !== NEWLINE) continue;
      lines[line++] = start;
      start = i + 1;
    }
    return new Synonyms(bytes, lines);
  }

  /** Number of terms with relatives. */
  get size(): number {
    return this.#lines.length;
  }

  /** The relatives of an index term; none for a term the table does not hold. */
  of(term: string): Relatives {
    const cached = this.#cache.get(term);
    if (cached !== undefined) return cached;
    const line = this.#find(term);
    const relatives = line < 0 ? NONE : this.#decode(line);
    this.#cache.set(term, relatives);
    return relatives;
  }

  /** Binary search for the entry line of `term` (terms are ASCII, sorted by byte); -1 when absent. */
  #find(term: string): number {
    let low = 0;
    let high = this.#lines.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const order = this.#compare(this.#lines[middle] as number, term);
      if (order === 0) return middle;
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** Orders the term of the entry at `offset` against `term`. */
  #compare(offset: number, term: string): number {
    const bytes = this.#bytes;
    for (let i = 0; ; i++) {
      const byte = bytes[offset + i] as number;
      const ended = byte === TAB;
      if (i === term.length) return ended ? 0 : 1;
      if (ended) return -1;
      const code = term.charCodeAt(i);
      if (byte !== code) return byte - code;
    }
  }

  #decode(line: number): Relatives {
    const start = this.#lines[line] as number;
    const end = this.#bytes.indexOf(NEWLINE, start);
    const [, synonyms = "", related = ""] = this.#decoder.decode(this.#bytes.subarray(start, end)).split("\t");
    return { synonyms: split(synonyms), related: split(related) };
  }
}

function split(list: string): string[] {
  return list === "" ? [] : list.split(" ");
}
