// In-memory metadata of every entry, indexed by seq, so that scope and filters are checked without touching
// LMDB. Derived data: loaded from the entries database at start-up and kept current by every write.
import type { EntryRecord, EntryType } from "../storage/entry-store.js";
import { ENTRY_TYPES, IMPORTANCE_LEVELS, isStaleRecord } from "../storage/entry-store.js";
import { PAGE_MASK, PAGE_SHIFT, SeqPages, type Page } from "./seq-pages.js";
import { ORIGINS, type Origin, type Trust } from "../storage/provenance.js";
import type { EntryExpiry } from "../storage/entry-expiry.js";
import { ExpiryLedger, type GroupTotal } from "./expiry-ledger.js";
import { evidenceTrust } from "../memory/evidence-trust.js";

const FLAG_PRESENT = 1;
const FLAG_STALE = 2;
const FLAG_GLOBAL_LESSON = 4;
const FLAG_DERIVED = 8;
/** A lesson or rule that must not surface as guidance: quarantined or invalidated. Never a retrieval candidate. */
const FLAG_WITHHELD = 16;
/** A lesson auditioning for a wider scope: a candidate in the owner's other runs, at reduced weight there. */
const FLAG_AUDITIONING = 32;
const FLAG_VERIFIED = 64;
const FLAG_VALIDATED = 128;

/** The provenance column: the origin's index in ORIGINS in the low bits, and this bit when the entry is untrusted. */
const PROVENANCE_UNTRUSTED = 0x80;
const PROVENANCE_ORIGIN = 0x7f;

/** Ranking weight of what outcomes taught: confidence, reinforcement and production use; 1 for an untouched entry. */
export function learnedWeight(confidence: number, reinforcementCount: number, verified: boolean): number {
  return ((0.5 + confidence) / 1.5) * (1 + 0.05 * Math.min(reinforcementCount, 10)) * (verified ? 1.25 : 1);
}

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

  value(id: number): string {
    return this.#values[id] ?? "";
  }
}

/** Adds one to a count kept in a map. */
function increment<K>(counts: Map<K, number>, key: K): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Takes `by` (one unless said) from a count kept in a map, dropping the key at zero. */
function decrement<K>(counts: Map<K, number>, key: K, by = 1): void {
  const next = (counts.get(key) ?? 0) - by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

/** Inserts `seq` into an ascending list kept in a map (appending in the usual, in-order case). */
function insertSorted<K>(map: Map<K, number[]>, key: K, seq: number): void {
  const list = map.get(key);
  if (list === undefined) {
    map.set(key, [seq]);
    return;
  }
  if (list.length === 0 || (list[list.length - 1] as number) < seq) {
    list.push(seq);
    return;
  }
  const at = lowerBound(list, seq);
  if (list[at] !== seq) list.splice(at, 0, seq);
}

/** Removes `seq` from an ascending list kept in a map, dropping the list when it empties. */
function removeSorted<K>(map: Map<K, number[]>, key: K, seq: number): void {
  const list = map.get(key);
  if (list === undefined) return;
  const at = lowerBound(list, seq);
  if (list[at] === seq) list.splice(at, 1);
  if (list.length === 0) map.delete(key);
}

/** First index of an ascending list whose value is at least `value`. */
function lowerBound(list: readonly number[], value: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The per-entry columns of 1,024 consecutive seqs (see seq-pages.ts). */
interface ColumnsPage extends Page {
  readonly owner: Int32Array;
  readonly run: Int32Array;
  readonly user: Int32Array;
  readonly lane: Int32Array;
  readonly type: Uint8Array;
  readonly importance: Uint8Array;
  readonly flags: Uint8Array;
  readonly occurrence: Float64Array;
  readonly created: Float64Array;
  readonly termCount: Int32Array;
  readonly author: Int32Array;
  /** The agent that wrote the entry (interned): what an expiry group needs to tell run listings whose count drops. */
  readonly agent: Int32Array;
  /** What outcomes taught, as one ranking weight (see learnedWeight). */
  readonly learned: Float32Array;
  /** Origin and trust (see PROVENANCE_UNTRUSTED). */
  readonly provenance: Uint8Array;
  /** The entry's own expiry (unix ms, 0: none), kept to judge it again when a retention policy changes. */
  readonly ownExpiry: Float64Array;
  /** When the entry expires, own expiry and retention policy together (unix ms, 0: never). */
  readonly expiry: Float64Array;
}

const ROWS = PAGE_MASK + 1;

function columnsPage(): ColumnsPage {
  return {
    live: 0,
    owner: new Int32Array(ROWS),
    run: new Int32Array(ROWS),
    user: new Int32Array(ROWS),
    lane: new Int32Array(ROWS),
    type: new Uint8Array(ROWS),
    importance: new Uint8Array(ROWS),
    flags: new Uint8Array(ROWS),
    occurrence: new Float64Array(ROWS),
    created: new Float64Array(ROWS),
    termCount: new Int32Array(ROWS),
    author: new Int32Array(ROWS),
    agent: new Int32Array(ROWS),
    learned: new Float32Array(ROWS),
    provenance: new Uint8Array(ROWS),
    ownExpiry: new Float64Array(ROWS),
    expiry: new Float64Array(ROWS),
  };
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
    filter.maxTimestamp === undefined &&
    filter.origins === undefined &&
    filter.trust === undefined
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
  /** Only entries of these origins (see storage/provenance.ts). Undefined: every origin. */
  readonly origins?: ReadonlySet<Origin> | undefined;
  /** Only entries of this trust level. Undefined: any. */
  readonly trust?: Trust | undefined;
}

/** Entries and index terms of one owner: the document statistics BM25 uses when it scores that owner's entries. */
export interface DocumentStats {
  readonly count: number;
  readonly averageTermCount: number;
}

/** Entries that expired together and had the same owner, run, type and agent. */
export interface ExpiredGroup {
  readonly owner: number;
  readonly runId: string;
  readonly entryType: EntryType;
  readonly agentId: string;
  readonly count: number;
}

/** Told of every entry the catalog gains or loses (start-up load included): derived per-run views such as run listings. */
export interface CatalogObserver {
  added(record: EntryRecord): void;
  /** A present entry left (a delete, an update's old copy, a run's deletion). */
  removed(seq: number, owner: number, runId: string, entryType: EntryType): void;
  /** Entries expired: they leave every count now, their rows stay until their purge (`released`). */
  expired(group: ExpiredGroup): void;
  /** An expired entry's row was dropped (its purge): nothing of it needs keeping. */
  released(seq: number): void;
}

/** What one expiry group's entries share (see ExpiryLedger): enough to take them out of every count at once. */
interface GroupFacts {
  readonly key: string;
  readonly owner: number;
  readonly runId: string;
  readonly typeIndex: number;
  readonly author: number;
  readonly agentId: string;
  readonly knowledge: boolean;
  readonly globalLesson: boolean;
}

/**
 * Isolation: everything here that ranking reads as a statistic (document counts and lengths, author names, who has
 * entries in a run) is kept per owner, so that one owner's writes never change what another owner's query computes.
 */
export class Catalog {
  /** Per-entry columns by seq, in pages released when their last entry leaves. */
  readonly #columns = new SeqPages(columnsPage);
  readonly #strings = new Interner();
  /** Lowercase author names: an entry's speaker label ("Name: …") or else its agent id. Ids only; who has which is below. */
  readonly #authors = new Interner();
  /** owner → author id → how many of the owner's entries are by that author. */
  readonly #authorCounts = new Map<number, Map<number, number>>();
  /** `${owner}/${run}` and `*\/${run}` → seqs in ascending order. */
  readonly #byScope = new Map<string, number[]>();
  /** `${owner}/${run}` and `*\/${run}` → seqs of the run's rules and lessons, ascending. */
  readonly #knowledge = new Map<string, number[]>();
  /** owner → seqs of lessons and rules recalled beyond their run: global ones and auditioning ones. */
  readonly #globalLessons = new Map<number, number[]>();
  /** owner → seqs of every lesson and rule, whatever its scope: what the validation gate compares against. */
  readonly #lessonsByOwner = new Map<number, number[]>();
  /** run → owner → how many entries the owner has in the run: the owners an admin's read of a run spans. */
  readonly #runOwners = new Map<string, Map<number, number>>();
  /** owner → entries and their summed term counts. */
  readonly #documents = new Map<number, { count: number; terms: number }>();
  #count = 0;
  #maxSeq = 0;
  readonly #observers: CatalogObserver[] = [];
  /** Judges expiry; undefined (catalogs built outside a server) leaves every entry unexpired. */
  #expiry: EntryExpiry | undefined;
  /**
   * The memory's clock when the catalog last caught up with it (never moving back): a present entry whose expiry is
   * at or before it is expired, has left every count, and awaits its purge; every later one is in `#ledger`.
   */
  #settledTo = 0;
  /** When present entries expire, by group: `expireDue` takes what is due without visiting each entry. */
  readonly #ledger = new ExpiryLedger();
  readonly #groupIds = new Map<string, number>();
  readonly #groups: (GroupFacts | undefined)[] = [];
  /** Entries in the ledger by group: a group none is left in is forgotten and its id reused. */
  readonly #groupRefs: number[] = [];
  readonly #freeGroups: number[] = [];
  #onStale: (() => void) | undefined;
  /** Seqs of expired entries still holding their rows, as the ledger handed them out: the purge's work list. */
  #expired: number[][] = [];
  /**
   * Lists that may still hold expired entries, by the map they are in: an expiry takes its entries out of the counts
   * at once and out of a list when the list is next read (one pass over it), so that no read pays for every list.
   */
  readonly #stale = new Map<Map<unknown, number[]>, Set<unknown>>([
    [this.#byScope, new Set()],
    [this.#knowledge, new Set()],
    [this.#globalLessons, new Set()],
    [this.#lessonsByOwner, new Set()],
  ]);

  /**
   * Judges expiry with this clock and these policies: an entry that is expired is never added (it awaits its purge),
   * and one that expires later leaves every list and statistic at the first read after its time (`expireDue`).
   */
  useExpiry(expiry: EntryExpiry): void {
    this.#expiry = expiry;
    expiry.settleWith(this);
  }

  /**
   * Catches up with the clock: the entries whose time has come leave every count and statistic at once (run
   * listings' too, via the observers), whole groups at a time, and every read of a list, scope or filter from then on
   * skips them; their rows stay until the purge removes them. Every list and statistic reader calls this first, so
   * what is expired is never read. Costs a clock read when nothing is due, and a step per group of each 256 entries
   * due otherwise, however many expire at once.
   */
  expireDue(): void {
    const expiry = this.#expiry;
    if (expiry === undefined) return;
    const now = Math.max(expiry.now(), this.#settledTo);
    this.#settledTo = now;
    if (this.#ledger.peekAt() > now) return;
    // Totals by group over every leaf due first, so that each group's counts and lists are touched once.
    const due = new Map<number, GroupTotal>();
    this.#ledger.takeDue(
      now,
      (group, { count, terms }) => {
        const total = due.get(group);
        if (total === undefined) due.set(group, { count, terms });
        else {
          total.count += count;
          total.terms += terms;
        }
      },
      (seqs) => this.#expired.push(seqs),
    );
    for (const [group, total] of due) this.#settle(group, total);
    if (due.size > 0) this.#onStale?.();
  }

  /**
   * Registers what is told when an expiry left lists holding expired entries: a background task that calls `tidy`
   * until it answers false, so that reads find them clean.
   */
  onStale(notify: () => void): void {
    this.#onStale = notify;
  }

  /** Rids one list of its expired entries; whether any list still holds some (call again, after a yield). */
  tidy(): boolean {
    for (const [map, keys] of this.#stale) {
      for (const key of keys) {
        this.#keepLive(map, key);
        return true;
      }
    }
    return false;
  }

  /** Queues an entry in the ledger, in its group. */
  #enqueue(at: number, seq: number, page: ColumnsPage, row: number): void {
    const group = this.#groupOf(page, row);
    this.#groupRefs[group] = (this.#groupRefs[group] ?? 0) + 1;
    this.#ledger.insert(at, seq, group, page.termCount[row] as number);
  }

  /** Takes an entry out of the ledger (deleted, or its expiry changed). */
  #dequeue(at: number, seq: number): void {
    const group = this.#ledger.remove(at, seq);
    if (group >= 0) this.#unref(group, 1);
  }

  /** `count` entries of the group left the ledger. */
  #unref(group: number, count: number): void {
    const refs = (this.#groupRefs[group] ?? 0) - count;
    this.#groupRefs[group] = refs;
    if (refs > 0) return;
    const facts = this.#groups[group] as GroupFacts;
    this.#groupIds.delete(facts.key);
    this.#groups[group] = undefined;
    this.#freeGroups.push(group);
  }

  /** A group's entries expired: out of every per-owner statistic and count now; their lists are filtered when read. */
  #settle(group: number, total: GroupTotal): void {
    const facts = this.#groups[group] as GroupFacts;
    this.#unref(group, total.count);
    const { owner, runId } = facts;
    const count = total.count;
    const documents = this.#documents.get(owner);
    if (documents !== undefined) {
      documents.count -= count;
      documents.terms -= total.terms;
      if (documents.count <= 0) this.#documents.delete(owner);
    }
    const runOwners = this.#runOwners.get(runId);
    if (runOwners !== undefined) {
      decrement(runOwners, owner, count);
      if (runOwners.size === 0) this.#runOwners.delete(runId);
    }
    const authors = this.#authorCounts.get(owner);
    if (authors !== undefined) {
      decrement(authors, facts.author, count);
      if (authors.size === 0) this.#authorCounts.delete(owner);
    }
    this.#count -= count;
    const stale = (map: Map<unknown, number[]>, key: unknown): void => void this.#stale.get(map)?.add(key);
    stale(this.#byScope, `${owner}/${runId}`);
    stale(this.#byScope, `*/${runId}`);
    if (facts.knowledge) {
      stale(this.#knowledge, `${owner}/${runId}`);
      stale(this.#knowledge, `*/${runId}`);
      stale(this.#lessonsByOwner, owner);
    }
    if (facts.globalLesson) stale(this.#globalLessons, owner);
    const expired: ExpiredGroup = { owner, runId, entryType: ENTRY_TYPES[facts.typeIndex] as EntryType, agentId: facts.agentId, count };
    for (const observer of this.#observers) observer.expired(expired);
  }

  /** The list under `key`, first rid of expired entries when an expiry touched it since it was last read. */
  #list<K>(map: Map<K, number[]>, key: K): readonly number[] {
    const stale = this.#stale.get(map as Map<unknown, number[]>) as Set<unknown>;
    if (stale.size > 0 && stale.has(key)) this.#keepLive(map, key);
    return map.get(key) ?? [];
  }

  /** Filters a list down to its live entries (a new array: a reader may hold the old one). */
  #keepLive<K>(map: Map<K, number[]>, key: K): void {
    this.#stale.get(map as Map<unknown, number[]>)?.delete(key);
    const list = map.get(key);
    if (list === undefined) return;
    // The has() test inlined, a page looked up once per run of seqs on it: lists run to 100k entries.
    const kept: number[] = [];
    let pageIndex = -1;
    let page: ColumnsPage | undefined;
    for (const seq of list) {
      if (seq >>> PAGE_SHIFT !== pageIndex) {
        pageIndex = seq >>> PAGE_SHIFT;
        page = this.#columns.page(seq);
      }
      if (page === undefined) continue;
      const row = seq & PAGE_MASK;
      if (((page.flags[row] as number) & FLAG_PRESENT) !== 0 && !this.#expiredRow(page, row)) kept.push(seq);
    }
    if (kept.length === 0) map.delete(key);
    else map.set(key, kept);
  }

  /**
   * The first (or, `last`, the newest) live entry of one owner's run, without filtering its list: what run listings
   * show, read from the list's ends past the expired entries it may still hold.
   */
  edgeSeq(owner: number, runId: string, last: boolean): number | undefined {
    this.expireDue();
    const list = this.#byScope.get(`${owner}/${runId}`) ?? [];
    for (let i = last ? list.length - 1 : 0; last ? i >= 0 : i < list.length; i += last ? -1 : 1) {
      const seq = list[i] as number;
      if (this.has(seq)) return seq;
    }
    return undefined;
  }

  /** The group an entry expires in, from its columns. */
  #groupOf(page: ColumnsPage, row: number): number {
    const owner = page.owner[row] as number;
    const typeIndex = page.type[row] as number;
    const globalLesson = ((page.flags[row] as number) & FLAG_GLOBAL_LESSON) !== 0;
    const key = `${owner},${page.run[row] as number},${typeIndex},${page.author[row] as number},${page.agent[row] as number},${globalLesson ? 1 : 0}`;
    let id = this.#groupIds.get(key);
    if (id === undefined) {
      id = this.#freeGroups.pop() ?? this.#groups.length;
      this.#groupIds.set(key, id);
      const type = ENTRY_TYPES[typeIndex];
      this.#groupRefs[id] = 0;
      this.#groups[id] = {
        key,
        owner,
        runId: this.#strings.value(page.run[row] as number),
        typeIndex,
        author: page.author[row] as number,
        agentId: this.#strings.value(page.agent[row] as number),
        knowledge: type === "rule" || type === "lesson",
        globalLesson,
      };
    }
    return id;
  }

  /** Whether a row holds an entry that expired (it left the counts and awaits its purge). */
  #expiredRow(page: ColumnsPage, row: number): boolean {
    const at = page.expiry[row] as number;
    return at !== 0 && at <= this.#settledTo;
  }

  /** Whether the catalog holds `seq` as expired, awaiting its purge (its row is still here). */
  holdsExpired(seq: number): boolean {
    const page = this.#columns.page(seq);
    const row = seq & PAGE_MASK;
    return page !== undefined && ((page.flags[row] as number) & FLAG_PRESENT) !== 0 && this.#expiredRow(page, row);
  }

  /**
   * Up to `limit` expired entries awaiting their purge, earliest expired first. Entries purged (or deleted) since
   * leave the work list here.
   */
  expiredSeqs(limit: number): number[] {
    const out: number[] = [];
    let emptied = 0;
    for (let i = 0; i < this.#expired.length && out.length < limit; i++) {
      const held = (this.#expired[i] as number[]).filter((seq) => this.holdsExpired(seq));
      this.#expired[i] = held;
      if (held.length === 0 && i === emptied) emptied++;
      for (const seq of held) {
        if (out.length === limit) break;
        out.push(seq);
      }
    }
    if (emptied > 0) this.#expired.splice(0, emptied);
    return out;
  }

  /**
   * An owner's retention policies changed: each of the owner's live entries is judged again (what had expired by the
   * former policies stays expired, so a relaxed policy never brings it back). Costs a pass over the owner's entries,
   * typed-array reads only; entries the new policies expire at once leave the counts by group, as `expireDue` does.
   */
  reexpire(owner: number): void {
    const expiry = this.#expiry;
    if (expiry === undefined) return;
    this.expireDue();
    const now = this.#settledTo;
    const dueNow = new Map<number, GroupTotal>();
    const expiredNow: number[] = [];
    for (const key of [...this.#byScope.keys()]) {
      if (!key.startsWith(`${owner}/`)) continue;
      const runId = key.slice(key.indexOf("/") + 1);
      for (const seq of this.#list(this.#byScope, key)) {
        const page = this.#columns.page(seq);
        if (page === undefined) continue;
        const row = seq & PAGE_MASK;
        const typeIndex = page.type[row] as number;
        const at = expiry.expiryOf({ seq, owner, runId, typeIndex, createdAt: page.created[row] as number, expiresAt: page.ownExpiry[row] as number });
        const before = page.expiry[row] as number;
        if (at === before) continue;
        if (before !== 0) this.#dequeue(before, seq);
        page.expiry[row] = at;
        if (at === 0) continue;
        if (at > now) {
          this.#enqueue(at, seq, page, row);
          continue;
        }
        // Expired by the new policies: settled below with the rest of its group, as the ledger would.
        const group = this.#groupOf(page, row);
        this.#groupRefs[group] = (this.#groupRefs[group] ?? 0) + 1;
        const total = dueNow.get(group) ?? { count: 0, terms: 0 };
        total.count++;
        total.terms += page.termCount[row] as number;
        dueNow.set(group, total);
        expiredNow.push(seq);
      }
    }
    for (const [group, total] of dueNow) this.#settle(group, total);
    if (expiredNow.length > 0) {
      this.#expired.push(expiredNow);
      this.#onStale?.();
    }
  }

  /** Registers an observer; register it before the start-up load so it sees every entry. */
  observe(observer: CatalogObserver): void {
    this.#observers.push(observer);
  }

  /** Bytes allocated for the per-entry columns (whole pages): storage statistics. */
  get memoryBytes(): number {
    return this.#columns.byteLength;
  }

  /** An entry's flags; 0 when it is absent. */
  #flagsOf(seq: number): number {
    return this.#columns.page(seq)?.flags[seq & PAGE_MASK] ?? 0;
  }

  /** Entries of every owner: storage statistics only, never a ranking input. */
  get count(): number {
    this.expireDue();
    return this.#count;
  }

  get maxSeq(): number {
    return this.#maxSeq;
  }

  /** The document statistics of one owner's entries. */
  documentStats(owner: number): DocumentStats {
    this.expireDue();
    const documents = this.#documents.get(owner);
    if (documents === undefined) return { count: 0, averageTermCount: 0 };
    return { count: documents.count, averageTermCount: documents.count === 0 ? 0 : documents.terms / documents.count };
  }

  add(record: EntryRecord): void {
    const seq = record.seq;
    if (this.#present(seq)) return;
    const expiry = this.#expiry;
    let expiresAt = record.expiresAt;
    if (expiry !== undefined) {
      expiresAt = expiry.expiryOfRecord(record);
      // Already expired (loaded at start-up, or replayed late): it awaits its purge and is never read.
      if (expiry.isHidden(seq) || (expiresAt !== 0 && expiresAt <= Math.max(expiry.now(), this.#settledTo))) {
        expiry.hide(seq);
        return;
      }
    }
    const page = this.#columns.pageFor(seq);
    const row = seq & PAGE_MASK;
    page.ownExpiry[row] = record.expiresAt;
    page.expiry[row] = expiresAt;
    page.live++;
    const owner = record.owner;
    page.owner[row] = owner;
    page.run[row] = this.#strings.id(record.runId);
    page.user[row] = this.#strings.id(record.userId);
    page.lane[row] = this.#strings.id(record.lane);
    page.type[row] = ENTRY_TYPES.indexOf(record.entryType);
    page.importance[row] = Math.max(0, IMPORTANCE_LEVELS.indexOf(record.importance));
    page.occurrence[row] = record.occurrenceTime || Math.floor(record.createdAt / 1000);
    page.created[row] = record.createdAt;
    page.termCount[row] = record.termCount;
    const author = this.#authors.id(authorOf(record));
    page.author[row] = author;
    page.agent[row] = this.#strings.id(record.agentId);
    const knowledge = record.entryType === "rule" || record.entryType === "lesson";
    const learning = record.learning;
    const withheld = knowledge && (learning.promotionState === "quarantined" || record.validationStatus === "invalidated");
    // Untrusted knowledge stays in its run whatever its scope says (see memory/evidence-trust.ts).
    const reachesOtherRuns = knowledge && !withheld && evidenceTrust(record) === "trusted";
    const auditioning = reachesOtherRuns && learning.promotionState === "auditioning" && record.lessonScope !== "global";
    const globalLesson = reachesOtherRuns && (record.lessonScope === "global" || auditioning);
    page.provenance[row] = ORIGINS.indexOf(record.provenance.origin) | (record.provenance.trust === "untrusted" ? PROVENANCE_UNTRUSTED : 0);
    page.learned[row] = learnedWeight(record.confidence, learning.reinforcementCount, learning.verifiedInProduction);
    page.flags[row] =
      FLAG_PRESENT |
      (isStaleRecord(record) ? FLAG_STALE : 0) |
      (globalLesson ? FLAG_GLOBAL_LESSON : 0) |
      (record.derived ? FLAG_DERIVED : 0) |
      (withheld ? FLAG_WITHHELD : 0) |
      (auditioning ? FLAG_AUDITIONING : 0) |
      (learning.verifiedInProduction ? FLAG_VERIFIED : 0) |
      (record.validationStatus === "validated" ? FLAG_VALIDATED : 0);
    insertSorted(this.#byScope, `${owner}/${record.runId}`, seq);
    insertSorted(this.#byScope, `*/${record.runId}`, seq);
    if (knowledge) {
      insertSorted(this.#knowledge, `${owner}/${record.runId}`, seq);
      insertSorted(this.#knowledge, `*/${record.runId}`, seq);
      insertSorted(this.#lessonsByOwner, owner, seq);
    }
    if (globalLesson) insertSorted(this.#globalLessons, owner, seq);
    let authors = this.#authorCounts.get(owner);
    if (authors === undefined) this.#authorCounts.set(owner, (authors = new Map()));
    increment(authors, author);
    let runOwners = this.#runOwners.get(record.runId);
    if (runOwners === undefined) this.#runOwners.set(record.runId, (runOwners = new Map()));
    increment(runOwners, owner);
    const documents = this.#documents.get(owner) ?? { count: 0, terms: 0 };
    documents.count++;
    documents.terms += record.termCount;
    this.#documents.set(owner, documents);
    this.#count++;
    this.#maxSeq = Math.max(this.#maxSeq, seq);
    if (expiresAt !== 0) this.#enqueue(expiresAt, seq, page, row);
    for (const observer of this.#observers) observer.added(record);
  }

  /**
   * Forgets an entry (a delete): it leaves every scope, list and per-owner statistic, and its columns are no longer
   * read (their page is released with its last entry, so `ownerOf` answers 0). Absent seqs are ignored.
   */
  remove(seq: number): void {
    const removed = this.#detach(seq);
    if (removed === undefined) return;
    removeSorted(this.#byScope, `${removed.owner}/${removed.runId}`, seq);
    removeSorted(this.#byScope, `*/${removed.runId}`, seq);
    if (removed.knowledge) {
      removeSorted(this.#knowledge, `${removed.owner}/${removed.runId}`, seq);
      removeSorted(this.#knowledge, `*/${removed.runId}`, seq);
      removeSorted(this.#lessonsByOwner, removed.owner, seq);
    }
    if (removed.globalLesson) removeSorted(this.#globalLessons, removed.owner, seq);
  }

  /** Forgets many entries at once (a run's deletion): each list they were in is filtered once, not once per entry. */
  removeAll(seqs: Iterable<number>): void {
    const scopeKeys = new Set<string>();
    const knowledgeKeys = new Set<string>();
    const lessonOwners = new Set<number>();
    const knowledgeOwners = new Set<number>();
    for (const seq of seqs) {
      const removed = this.#detach(seq);
      if (removed === undefined) continue;
      scopeKeys.add(`${removed.owner}/${removed.runId}`).add(`*/${removed.runId}`);
      if (removed.knowledge) {
        knowledgeKeys.add(`${removed.owner}/${removed.runId}`).add(`*/${removed.runId}`);
        knowledgeOwners.add(removed.owner);
      }
      if (removed.globalLesson) lessonOwners.add(removed.owner);
    }
    // Detached entries are no longer present, so keeping the live ones drops exactly them (and any expired ones).
    const keep = <K>(map: Map<K, number[]>, keys: Iterable<K>): void => {
      for (const key of keys) this.#keepLive(map, key);
    };
    keep(this.#byScope, scopeKeys);
    keep(this.#knowledge, knowledgeKeys);
    keep(this.#globalLessons, lessonOwners);
    keep(this.#lessonsByOwner, knowledgeOwners);
  }

  /**
   * Takes a changed record (an update: lane, metadata, importance, confidence, staleness, lesson scope, content and
   * so term count and speaker) in place of the stored one. Entries not present are left absent.
   */
  replace(record: EntryRecord): void {
    if (!this.has(record.seq)) return;
    this.remove(record.seq);
    this.add(record);
  }

  /**
   * Clears an entry's presence and takes it out of every per-owner statistic; the caller fixes its lists. An expired
   * entry left the statistics when it expired and its lists are filtered when next read: only its row goes.
   */
  #detach(seq: number): { owner: number; runId: string; knowledge: boolean; globalLesson: boolean } | undefined {
    const page = this.#columns.page(seq);
    const row = seq & PAGE_MASK;
    if (page === undefined || ((page.flags[row] as number) & FLAG_PRESENT) === 0) return undefined;
    if (this.#expiredRow(page, row)) {
      page.flags[row] = 0;
      this.#columns.emptied(seq);
      for (const observer of this.#observers) observer.released(seq);
      return undefined;
    }
    const at = page.expiry[row] as number;
    if (at !== 0) this.#dequeue(at, seq);
    const flags = page.flags[row] as number;
    const owner = page.owner[row] as number;
    const runId = this.#strings.value(page.run[row] as number);
    const type = this.entryType(seq);
    const author = page.author[row] as number;
    const termCount = page.termCount[row] as number;
    page.flags[row] = 0;
    this.#columns.emptied(seq);
    const authors = this.#authorCounts.get(owner);
    if (authors !== undefined) {
      decrement(authors, author);
      if (authors.size === 0) this.#authorCounts.delete(owner);
    }
    const runOwners = this.#runOwners.get(runId);
    if (runOwners !== undefined) {
      decrement(runOwners, owner);
      if (runOwners.size === 0) this.#runOwners.delete(runId);
    }
    const documents = this.#documents.get(owner);
    if (documents !== undefined) {
      documents.count--;
      documents.terms -= termCount;
      if (documents.count === 0) this.#documents.delete(owner);
    }
    this.#count--;
    for (const observer of this.#observers) observer.removed(seq, owner, runId, type);
    return { owner, runId, knowledge: type === "rule" || type === "lesson", globalLesson: (flags & FLAG_GLOBAL_LESSON) !== 0 };
  }

  markStale(seq: number): void {
    const page = this.#columns.page(seq);
    if (page !== undefined) page.flags[seq & PAGE_MASK] = (page.flags[seq & PAGE_MASK] as number) | FLAG_STALE;
  }

  /** Whether the entry is here and not expired: what every reader means by "in the catalog". */
  has(seq: number): boolean {
    const page = this.#columns.page(seq);
    const row = seq & PAGE_MASK;
    return page !== undefined && ((page.flags[row] as number) & FLAG_PRESENT) !== 0 && !this.#expiredRow(page, row);
  }

  /** Whether the entry's row is here, expired or not. */
  #present(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_PRESENT) !== 0;
  }

  isStale(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_STALE) !== 0;
  }

  isGlobalLesson(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_GLOBAL_LESSON) !== 0;
  }

  /** A quarantined or invalidated lesson or rule: never guidance. */
  isWithheld(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_WITHHELD) !== 0;
  }

  isAuditioning(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_AUDITIONING) !== 0;
  }

  isValidated(seq: number): boolean {
    return (this.#flagsOf(seq) & FLAG_VALIDATED) !== 0;
  }

  /** Ranking weight from outcomes (see learnedWeight). */
  learnedWeight(seq: number): number {
    return this.#columns.page(seq)?.learned[seq & PAGE_MASK] ?? 0;
  }

  /** The run an entry was written in. */
  runOf(seq: number): string {
    return this.#strings.value(this.#columns.page(seq)?.run[seq & PAGE_MASK] ?? 0);
  }

  entryType(seq: number): EntryType {
    return ENTRY_TYPES[this.#columns.page(seq)?.type[seq & PAGE_MASK] ?? 0] as EntryType;
  }

  importanceLevel(seq: number): number {
    return this.#columns.page(seq)?.importance[seq & PAGE_MASK] ?? 0;
  }

  occurrence(seq: number): number {
    return this.#columns.page(seq)?.occurrence[seq & PAGE_MASK] ?? 0;
  }

  createdAt(seq: number): number {
    return this.#columns.page(seq)?.created[seq & PAGE_MASK] ?? 0;
  }

  termCount(seq: number): number {
    return this.#columns.page(seq)?.termCount[seq & PAGE_MASK] ?? 0;
  }

  /** The author id of a lowercase name, when some entry of `owner` has that author (other owners' never count). */
  authorId(owner: number, name: string): number | undefined {
    const id = this.#authors.lookup(name);
    if (id === undefined || name === "") return undefined;
    return (this.#authorCounts.get(owner)?.get(id) ?? 0) > 0 ? id : undefined;
  }

  authorOf(seq: number): number {
    return this.#columns.page(seq)?.author[seq & PAGE_MASK] ?? 0;
  }

  ownerOf(seq: number): number {
    return this.#columns.page(seq)?.owner[seq & PAGE_MASK] ?? 0;
  }

  /** The owner of a present entry; undefined for absent ones (never written, deleted or hidden). */
  presentOwnerOf(seq: number): number | undefined {
    return this.has(seq) ? this.ownerOf(seq) : undefined;
  }

  /** Owners with entries in a run, ascending: the owners an admin's read of the run spans. */
  runOwners(runId: string): number[] {
    this.expireDue();
    return [...(this.#runOwners.get(runId)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /** Seqs of one run: one owner's, or every owner's when `owner` is undefined (admins). Ascending. */
  runSeqs(owner: number | undefined, runId: string): readonly number[] {
    this.expireDue();
    return this.#list(this.#byScope, owner === undefined ? `*/${runId}` : `${owner}/${runId}`);
  }

  /** Seqs of a run's rules and lessons: one owner's, or every owner's when `owner` is undefined. Ascending. */
  knowledgeSeqs(owner: number | undefined, runId: string): readonly number[] {
    this.expireDue();
    return this.#list(this.#knowledge, owner === undefined ? `*/${runId}` : `${owner}/${runId}`);
  }

  /** Seqs of an owner's lessons and rules recalled beyond their run (global or auditioning). Ascending. */
  globalLessonSeqs(owner: number): readonly number[] {
    this.expireDue();
    return this.#list(this.#globalLessons, owner);
  }

  /** Seqs of every lesson and rule of an owner, withheld ones included. Ascending. */
  lessonSeqs(owner: number): readonly number[] {
    this.expireDue();
    return this.#list(this.#lessonsByOwner, owner);
  }

  /**
   * A predicate for "is this entry in the reader's scope": entries of the given runs (one owner's, or any owner's
   * when `owner` is undefined; limited to some lanes when `lanes` is set), plus `globalLessonOwner`'s global lessons.
   */
  scopeMatcher(scopes: readonly RunScope[], globalLessonOwner: number | undefined): (seq: number) => boolean {
    this.expireDue();
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
        const page = this.#columns.page(seq);
        if (page === undefined) return false;
        const row = seq & PAGE_MASK;
        const flags = page.flags[row] as number;
        if ((flags & (FLAG_PRESENT | FLAG_WITHHELD)) !== FLAG_PRESENT || this.#expiredRow(page, row)) return false;
        const entryOwner = page.owner[row] as number;
        if (entryOwner === owner && page.run[row] === run) return true;
        return globalLessonOwner !== undefined && entryOwner === globalLessonOwner && (flags & FLAG_GLOBAL_LESSON) !== 0;
      };
    }
    return (seq) => {
      const page = this.#columns.page(seq);
      if (page === undefined) return false;
      const row = seq & PAGE_MASK;
      const flags = page.flags[row] as number;
      if ((flags & (FLAG_PRESENT | FLAG_WITHHELD)) !== FLAG_PRESENT || this.#expiredRow(page, row)) return false;
      const entryOwner = page.owner[row] as number;
      if (globalLessonOwner !== undefined && (flags & FLAG_GLOBAL_LESSON) !== 0 && entryOwner === globalLessonOwner) return true;
      const run = page.run[row] as number;
      for (const scope of resolved) {
        if (scope.run !== run || (scope.owner !== undefined && scope.owner !== entryOwner)) continue;
        if (scope.lanes === undefined || scope.lanes.has(page.lane[row] as number)) return true;
      }
      return false;
    };
  }

  /** A predicate applying the filters; built once per query so the hot loop only reads typed arrays. */
  matcher(filter: EntryFilter): (seq: number) => boolean {
    this.expireDue();
    if (isUnfiltered(filter)) return (seq) => this.has(seq);
    const types = filter.entryTypes === undefined ? undefined : new Set([...filter.entryTypes].map((t) => ENTRY_TYPES.indexOf(t)));
    const noUser = this.#strings.id("");
    const user = filter.userId === undefined ? undefined : (this.#strings.lookup(filter.userId) ?? -1);
    const noLane = this.#strings.id("");
    const lane = filter.laneFilter === "" ? undefined : (this.#strings.lookup(filter.laneFilter) ?? -1);
    const min = filter.minTimestamp ?? -Infinity;
    const max = filter.maxTimestamp ?? Infinity;
    const origins = filter.origins === undefined ? undefined : new Set([...filter.origins].map((o) => ORIGINS.indexOf(o)));
    const untrusted = filter.trust === undefined ? undefined : filter.trust === "untrusted";
    return (seq) => {
      const page = this.#columns.page(seq);
      const row = seq & PAGE_MASK;
      if (page === undefined || ((page.flags[row] as number) & FLAG_PRESENT) === 0 || this.#expiredRow(page, row)) return false;
      if (types !== undefined && !types.has(page.type[row] as number)) return false;
      if (user !== undefined) {
        const u = page.user[row] as number;
        if (u !== noUser && u !== user) return false;
      }
      if (lane !== undefined) {
        const l = page.lane[row] as number;
        if (l !== noLane && l !== lane) return false;
      }
      if (origins !== undefined || untrusted !== undefined) {
        const provenance = page.provenance[row] as number;
        if (origins !== undefined && !origins.has(provenance & PROVENANCE_ORIGIN)) return false;
        if (untrusted !== undefined && ((provenance & PROVENANCE_UNTRUSTED) !== 0) !== untrusted) return false;
      }
      const when = page.occurrence[row] as number;
      return when >= min && when <= max;
    };
  }
}
