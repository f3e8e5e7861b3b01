// Forget by subject: every entry of one owner whose indexed text holds all the subject's words, first previewed (a
// count, a sample and a token naming exactly that set), then erased through the delete path of single entries in
// bounded slices, with a receipt. The erasure re-reads the matches and refuses when they are not the previewed set.
import { createHash, randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import type { EntryStore, EntryType } from "../storage/entry-store.js";
import { terms } from "../retrieval/text.js";
import type { EntryChanges } from "./entry-changes.js";
import type { MemoryIndex } from "./memory-index.js";
import { postingListHolds, postingListLength, postingSeqAt } from "../retrieval/sparse-index.js";
import { TimeSlicer } from "./scan.js";

/** Entries one Forget may erase: more is refused, so that a preview's token and an erasure stay bounded. */
export const MAX_FORGET_ENTRIES = 10_000;
/** Entries a preview lists. */
export const FORGET_SAMPLE = 20;
const SNIPPET_CHARS = 200;
/** Entries erased per transaction (as a run's purge slices them). */
const ERASE_SLICE = 32;

export interface ForgetSubject {
  readonly owner: number;
  readonly query: string;
  /** Empty: every run of the owner. */
  readonly runIds: readonly string[];
  /** Undefined: every entry type. */
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
}

export interface ForgetPreview {
  readonly matched: number;
  readonly sample: readonly { id: string; runId: string; entryType: string; snippet: string }[];
  readonly token: string;
}

export interface ForgetReceipt {
  readonly receiptId: string;
  readonly erasedAt: number;
  /** Entries erased by entry type, and `entries`: all of them. */
  readonly erased: Readonly<Record<string, number>>;
}

export class ForgetTooBroad extends Error {}

export class Forgetting {
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #changes: EntryChanges;
  readonly #events: EventBus;
  readonly #now: () => number;

  constructor(entries: EntryStore, index: MemoryIndex, changes: EntryChanges, events: EventBus, now: () => number) {
    this.#entries = entries;
    this.#index = index;
    this.#changes = changes;
    this.#events = events;
    this.#now = now;
  }

  /** What an erasure of the subject would erase now. Throws ForgetTooBroad beyond MAX_FORGET_ENTRIES. */
  async preview(subject: ForgetSubject): Promise<ForgetPreview> {
    const seqs = await this.#matches(subject);
    const sample = seqs
      .slice(-FORGET_SAMPLE)
      .reverse()
      .flatMap((seq) => {
        const entry = this.#entries.get(seq);
        return entry === undefined ? [] : [{ id: entry.id, runId: entry.runId, entryType: entry.entryType, snippet: [...entry.content].slice(0, SNIPPET_CHARS).join("") }];
      });
    return { matched: seqs.length, sample, token: tokenOf(subject, seqs) };
  }

  /**
   * Erases the subject's entries when they are still exactly those the preview with `token` listed; undefined (and
   * nothing erased) otherwise.
   */
  async erase(subject: ForgetSubject, token: string, agentId: string): Promise<ForgetReceipt | undefined> {
    const seqs = await this.#matches(subject);
    if (tokenOf(subject, seqs) !== token) return undefined;
    const receiptId = `fgt_${randomBytes(9).toString("base64url")}`;
    const erased: Record<string, number> = { entries: 0 };
    const byRun = new Map<string, Record<string, number>>();
    for (let i = 0; i < seqs.length; i += ERASE_SLICE) {
      const deleted = await this.#changes.deleteAll(seqs.slice(i, i + ERASE_SLICE), { reason: `forget ${receiptId}`, agentId });
      for (const { record } of deleted) {
        erased[record.entryType] = (erased[record.entryType] ?? 0) + 1;
        erased["entries"] = (erased["entries"] ?? 0) + 1;
        const run = byRun.get(record.runId) ?? {};
        run[record.entryType] = (run[record.entryType] ?? 0) + 1;
        byRun.set(record.runId, run);
      }
    }
    this.#index.dense.saveSoon();
    for (const [runId, counts] of byRun) {
      this.#events.publish({ type: "entry.forgotten", owner: subject.owner, runId, agentId, payload: JSON.stringify({ receipt_id: receiptId, erased: counts, query: subject.query }) });
    }
    return { receiptId, erasedAt: this.#now(), erased };
  }

  /**
   * Seqs of the owner's visible entries holding every term of the subject, ascending: the shortest posting list
   * walked, each of its entries looked up in the others by binary search.
   */
  async #matches(subject: ForgetSubject): Promise<number[]> {
    const { catalog, sparse } = this.#index;
    const wanted = [...new Set(terms(subject.query))];
    const lists: Int32Array[] = [];
    for (const term of wanted) {
      const list = sparse.list(subject.owner, term);
      if (list === undefined) return [];
      lists.push(list);
    }
    lists.sort((a, b) => postingListLength(a) - postingListLength(b));
    const [shortest, ...others] = lists;
    if (shortest === undefined) return [];
    const runs = subject.runIds.length === 0 ? undefined : new Set(subject.runIds);
    const found: number[] = [];
    const slicer = new TimeSlicer();
    for (let i = 0; i < postingListLength(shortest); i++) {
      const seq = postingSeqAt(shortest, i);
      if (
        catalog.has(seq) &&
        catalog.ownerOf(seq) === subject.owner &&
        (runs === undefined || runs.has(catalog.runOf(seq))) &&
        (subject.entryTypes === undefined || subject.entryTypes.has(catalog.entryType(seq))) &&
        others.every((list) => postingListHolds(list, seq))
      ) {
        found.push(seq);
        if (found.length > MAX_FORGET_ENTRIES) throw new ForgetTooBroad(`more than ${MAX_FORGET_ENTRIES} entries match`);
      }
      const pause = slicer.tick();
      if (pause) await pause;
    }
    return found;
  }
}


/** Names one subject's exact set of matches: an erasure passes it back to erase that set and nothing else. */
function tokenOf(subject: ForgetSubject, seqs: readonly number[]): string {
  const hash = createHash("sha256");
  hash.update(JSON.stringify([subject.owner, subject.query, [...subject.runIds].sort(), [...(subject.entryTypes ?? [])].sort()]));
  hash.update(Int32Array.from(seqs));
  return `fpt_${hash.digest("base64url").slice(0, 32)}`;
}

/** The refusal of an erasure whose token no longer names the caller's matches. */
export function staleForgetToken(): ConnectError {
  return new ConnectError("preview_token: the entries matching the query changed since the preview; preview again", Code.Aborted);
}
