// In-memory metadata of every entry, indexed by seq, so that scope and filters are checked without touching
// LMDB. Derived data: loaded from the entries database at start-up and kept current by every write.
import type { EntryRecord, EntryType } from "../storage/entry-store.js";
import { ENTRY_TYPES, IMPORTANCE_LEVELS } from "../storage/entry-store.js";

const FLAG_PRESENT = 1;
const FLAG_STALE = 2;
const FLAG_GLOBAL_LESSON = 4;
const FLAG_DERIVED = 8;

/** Interns strings as small integers so per-entry metadata fits in typed arrays. */
class Interner {
  readonly #ids = new Map<string, number>();
  readonly #values: string[] = [];

  id(value: string): number {
    let id = this.#ids.get(value);
    if (id === undefined) {
      id = this.#values.length;
      this.#ids.set(value, id);
      this.#values.push(value);
    }
    return id;
  }

  lookup(value: string): number | undefined {
    return this.#ids.get(value);
  }
}

function grow<T extends Int32Array | Float64Array | Uint8Array>(array: T, size: number, make: (n: number) => T): T {
  if (size <= array.length) return array;
  const next = make(Math.max(size, array.length * 2));
  next.set(array);
  return next;
}

/** A speaker label opening the content, as in "Caroline: I went to the support group." */
const SPEAKER_LABEL = /^([\p{Lu}][\p{L}'.-]*(?: [\p{Lu}][\p{L}'.-]*){0,3}):\s/u;

/** Who an entry is by: the speaker label that opens it, else the agent that wrote it; lowercase, "" if neither. */
export function authorOf(record: Pick<EntryRecord, "content" | "agentId">): string {
  const label = SPEAKER_LABEL.exec(record.content);
  return (label?.[1] ?? record.agentId).toLowerCase();
}

/** Entries of one run readable by a query: one owner's (undefined: every owner's), optionally only some lanes. */
export interface RunScope {
  readonly owner: number | undefined;
  readonly runId: string;
  readonly lanes?: ReadonlySet<string> | undefined;
}

export function isUnfiltered(filter: EntryFilter): boolean {
  return (
    filter.entryTypes === undefined &&
    filter.userId === undefined &&
    filter.laneFilter === "" &&
    filter.minTimestamp === undefined &&
    filter.maxTimestamp === undefined
  );
}

export interface EntryFilter {
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
  /** Logical user: entries about this user or about no one. Undefined: no filter. */
  readonly userId: string | undefined;
  /** "" sees every lane; otherwise entries without a lane plus entries of this lane. */
  readonly laneFilter: string;
  /** Inclusive bounds on occurrence time (creation time when none), unix seconds. */
  readonly minTimestamp: number | undefined;
  readonly maxTimestamp: number | undefined;
}

export class Catalog {
  #owner = new Int32Array(1024);
  #run = new Int32Array(1024);
  #user = new Int32Array(1024);
  #lane = new Int32Array(1024);
  #type = new Uint8Array(1024);
  #importance = new Uint8Array(1024);
  #flags = new Uint8Array(1024);
  #occurrence = new Float64Array(1024);
  #created = new Float64Array(1024);
  #termCount = new Int32Array(1024);
  #author = new Int32Array(1024);
  readonly #strings = new Interner();
  /** Lowercase author names: an entry's speaker label ("Name: …") or else its agent id; 0 is "unknown". */
  readonly #authors = new Interner();
  /** `${owner}/${run}` and `*\/${run}` → seqs in ascending order. */
  readonly #byScope = new Map<string, number[]>();
  /** `${owner}/${run}` and `*\/${run}` → seqs of the run's rules and lessons, ascending. */
  readonly #knowledge = new Map<string, number[]>();
  /** owner → seqs of global lessons. */
  readonly #globalLessons = new Map<number, number[]>();
  #count = 0;
  #totalTerms = 0;
  #maxSeq = 0;

  /** Bytes allocated for the per-entry columns (spare capacity included): storage statistics. */
  get memoryBytes(): number {
    const columns = [this.#owner, this.#run, this.#user, this.#lane, this.#type, this.#importance, this.#flags, this.#occurrence, this.#created, this.#termCount, this.#author];
    return columns.reduce((sum, column) => sum + column.byteLength, 0);
  }

  get count(): number {
    return this.#count;
  }

  get maxSeq(): number {
    return this.#maxSeq;
  }

  get averageTermCount(): number {
    return this.#count === 0 ? 0 : this.#totalTerms / this.#count;
  }

  add(record: EntryRecord): void {
    const seq = record.seq;
    const size = seq + 1;
    this.#owner = grow(this.#owner, size, (n) => new Int32Array(n));
    this.#run = grow(this.#run, size, (n) => new Int32Array(n));
    this.#user = grow(this.#user, size, (n) => new Int32Array(n));
    this.#lane = grow(this.#lane, size, (n) => new Int32Array(n));
    this.#type = grow(this.#type, size, (n) => new Uint8Array(n));
    this.#importance = grow(this.#importance, size, (n) => new Uint8Array(n));
    this.#flags = grow(this.#flags, size, (n) => new Uint8Array(n));
    this.#occurrence = grow(this.#occurrence, size, (n) => new Float64Array(n));
    this.#created = grow(this.#created, size, (n) => new Float64Array(n));
    this.#termCount = grow(this.#termCount, size, (n) => new Int32Array(n));
    this.#author = grow(this.#author, size, (n) => new Int32Array(n));
    if ((this.#flags[seq] as number) & FLAG_PRESENT) return;
    this.#owner[seq] = record.owner;
    this.#run[seq] = this.#strings.id(record.runId);
    this.#user[seq] = this.#strings.id(record.userId);
    this.#lane[seq] = this.#strings.id(record.lane);
    this.#type[seq] = ENTRY_TYPES.indexOf(record.entryType);
    this.#importance[seq] = Math.max(0, IMPORTANCE_LEVELS.indexOf(record.importance));
    this.#occurrence[seq] = record.occurrenceTime || Math.floor(record.createdAt / 1000);
    this.#created[seq] = record.createdAt;
    this.#termCount[seq] = record.termCount;
    this.#author[seq] = this.#authors.id(authorOf(record));
    const globalLesson = record.entryType === "lesson" && record.lessonScope === "global";
    this.#flags[seq] =
      FLAG_PRESENT |
      (record.supersededBy !== "" ? FLAG_STALE : 0) |
      (globalLesson ? FLAG_GLOBAL_LESSON : 0) |
      (record.derived ? FLAG_DERIVED : 0);
    this.#push(this.#byScope, `${record.owner}/${record.runId}`, seq);
    this.#push(this.#byScope, `*/${record.runId}`, seq);
    if (record.entryType === "rule" || record.entryType === "lesson") {
      this.#push(this.#knowledge, `${record.owner}/${record.runId}`, seq);
      this.#push(this.#knowledge, `*/${record.runId}`, seq);
    }
    if (globalLesson) {
      const list = this.#globalLessons.get(record.owner) ?? [];
      list.push(seq);
      this.#globalLessons.set(record.owner, list);
    }
    this.#count++;
    this.#totalTerms += record.termCount;
    this.#maxSeq = Math.max(this.#maxSeq, seq);
  }

  #push(map: Map<string, number[]>, key: string, seq: number): void {
    const list = map.get(key);
    if (list === undefined) map.set(key, [seq]);
    else if ((list[list.length - 1] as number) < seq) list.push(seq);
    else {
      // Out-of-order only while loading unordered sources; keep the list sorted.
      list.push(seq);
      list.sort((a, b) => a - b);
    }
  }

  markStale(seq: number): void {
    if (seq < this.#flags.length) this.#flags[seq] = (this.#flags[seq] as number) | FLAG_STALE;
  }

  has(seq: number): boolean {
    return seq < this.#flags.length && ((this.#flags[seq] as number) & FLAG_PRESENT) !== 0;
  }

  isStale(seq: number): boolean {
    return ((this.#flags[seq] as number) & FLAG_STALE) !== 0;
  }

  isGlobalLesson(seq: number): boolean {
    return ((this.#flags[seq] as number) & FLAG_GLOBAL_LESSON) !== 0;
  }

  entryType(seq: number): EntryType {
    return ENTRY_TYPES[this.#type[seq] as number] as EntryType;
  }

  importanceLevel(seq: number): number {
    return this.#importance[seq] as number;
  }

  occurrence(seq: number): number {
    return this.#occurrence[seq] as number;
  }

  createdAt(seq: number): number {
    return this.#created[seq] as number;
  }

  termCount(seq: number): number {
    return this.#termCount[seq] as number;
  }

  /** The author id of a lowercase name, when some entry has that author. */
  authorId(name: string): number | undefined {
    const id = this.#authors.lookup(name);
    return id === undefined || id === this.#authors.id("") ? undefined : id;
  }

  authorOf(seq: number): number {
    return this.#author[seq] as number;
  }

  ownerOf(seq: number): number {
    return this.#owner[seq] as number;
  }

  /** Seqs of one run: one owner's, or every owner's when `owner` is undefined (admins). Ascending. */
  runSeqs(owner: number | undefined, runId: string): readonly number[] {
    return this.#byScope.get(owner === undefined ? `*/${runId}` : `${owner}/${runId}`) ?? [];
  }

  /** Seqs of a run's rules and lessons: one owner's, or every owner's when `owner` is undefined. Ascending. */
  knowledgeSeqs(owner: number | undefined, runId: string): readonly number[] {
    return this.#knowledge.get(owner === undefined ? `*/${runId}` : `${owner}/${runId}`) ?? [];
  }

  /** Seqs of an owner's global lessons. Ascending. */
  globalLessonSeqs(owner: number): readonly number[] {
    return this.#globalLessons.get(owner) ?? [];
  }

  /**
   * A predicate for "is this entry in the reader's scope": entries of the given runs (one owner's, or any owner's
   * when `owner` is undefined; limited to some lanes when `lanes` is set), plus `globalLessonOwner`'s global lessons.
   */
  scopeMatcher(scopes: readonly RunScope[], globalLessonOwner: number | undefined): (seq: number) => boolean {
    const resolved = scopes.map((scope) => ({
      owner: scope.owner,
      run: this.#strings.lookup(scope.runId) ?? -1,
      lanes: scope.lanes === undefined ? undefined : new Set([...scope.lanes].map((lane) => this.#strings.lookup(lane) ?? -1)),
    }));
    const only = resolved.length === 1 ? resolved[0] : undefined;
    if (only !== undefined && only.lanes === undefined && only.owner !== undefined) {
      // The common case, kept to a few typed-array reads: one owner's run.
      const { owner, run } = only;
      return (seq) => {
        const flags = this.#flags[seq] as number;
        if ((flags & FLAG_PRESENT) === 0) return false;
        const entryOwner = this.#owner[seq] as number;
        if (entryOwner === owner && this.#run[seq] === run) return true;
        return globalLessonOwner !== undefined && entryOwner === globalLessonOwner && (flags & FLAG_GLOBAL_LESSON) !== 0;
      };
    }
    return (seq) => {
      const flags = this.#flags[seq] as number;
      if ((flags & FLAG_PRESENT) === 0) return false;
      const entryOwner = this.#owner[seq] as number;
      if (globalLessonOwner !== undefined && (flags & FLAG_GLOBAL_LESSON) !== 0 && entryOwner === globalLessonOwner) return true;
      const run = this.#run[seq] as number;
      for (const scope of resolved) {
        if (scope.run !== run || (scope.owner !== undefined && scope.owner !== entryOwner)) continue;
        if (scope.lanes === undefined || scope.lanes.has(this.#lane[seq] as number)) return true;
      }
      return false;
    };
  }

  /** A predicate applying the filters; built once per query so the hot loop only reads typed arrays. */
  matcher(filter: EntryFilter): (seq: number) => boolean {
    if (isUnfiltered(filter)) return (seq) => ((this.#flags[seq] as number) & FLAG_PRESENT) !== 0;
    const types = filter.entryTypes === undefined ? undefined : new Set([...filter.entryTypes].map((t) => ENTRY_TYPES.indexOf(t)));
    const noUser = this.#strings.id("");
    const user = filter.userId === undefined ? undefined : (this.#strings.lookup(filter.userId) ?? -1);
    const noLane = this.#strings.id("");
    const lane = filter.laneFilter === "" ? undefined : (this.#strings.lookup(filter.laneFilter) ?? -1);
    const min = filter.minTimestamp ?? -Infinity;
    const max = filter.maxTimestamp ?? Infinity;
    return (seq) => {
      if (((this.#flags[seq] as number) & FLAG_PRESENT) === 0) return false;
      if (types !== undefined && !types.has(this.#type[seq] as number)) return false;
      if (user !== undefined) {
        const u = this.#user[seq] as number;
        if (u !== noUser && u !== user) return false;
      }
      if (lane !== undefined) {
        const l = this.#lane[seq] as number;
        if (l !== noLane && l !== lane) return false;
      }
      const when = this.#occurrence[seq] as number;
      return when >= min && when <= max;
    };
  }
}
