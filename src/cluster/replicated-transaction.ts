// A write transaction of clustered mode: computed on this node against its copy of the shard, replicated through the
// command log, and applied from the log, here as on every replica. The command is the transaction's writes as LMDB
// received them (records with their ids, seqs and timestamps already fixed), so every replica that applies the
// shard's commands in order holds byte-identical data.
//
// Concurrency is optimistic and per shard. A command names the shard's last accepted command it was computed after
// (`basedOn`); every node applying the shard in log order accepts it only if that is still the last accepted one, and
// otherwise skips it, the same way everywhere (the decision reads nothing but the log). The writer learns from its own
// application whether its command was accepted, and computes again if not. The append also sends JetStream the
// shard's last sequence it expects, which refuses most conflicts early; it is not relied upon, because nats-server
// 2.9 does not serialise that check on a replicated stream (nats-io/nats-server#4320: two appends expecting the same
// sequence can both be stored).
import { randomUUID } from "node:crypto";
import { Packr } from "msgpackr";
import { wakeable } from "../platform/wakeable.js";
import type { ReplayedWrite, SequenceStride, Storage, WriteOp } from "../storage/database.js";
import { ShardMovedOn, type CommandLog, type LoggedCommand } from "./command-log.js";
import { appliedSequence, catchUp } from "./shard-applier.js";

/** A transaction waiting for its shard's turn. */
interface Queued {
  readonly fn: () => unknown;
  readonly sequences: SequenceStride | undefined;
  resolve(outcome: { result: unknown; sequence: number }): void;
  reject(error: unknown): void;
}

/** Transactions of a shard computed into one command at most (group commit through the log). */
const MAX_BATCH = 64;
/** A batch stops growing past this many writes: each transaction is computed on top of all the writes before it. */
const MAX_BATCH_WRITES = 20_000;
/** Transactions of a shard waiting on one node at most; more are refused (unavailable) rather than queued unbounded. */
const MAX_QUEUED = 10_000;

/** Conflicts retried before the transaction gives up (each retry first applies the commands that won). */
const MAX_ATTEMPTS = 50;

// Plain msgpack (no shared structures): a command must decode on any node, whatever it decoded before.
const codec = new Packr({ useRecords: false, moreTypes: true });

/** A replicated transaction as the log holds it. */
interface WriteCommand {
  /** The shard's last accepted command when the writes were computed (0: none). */
  readonly basedOn: number;
  /** The replica that computed it: its own code updates what it derives from the writes, not the replay. */
  readonly writer: string;
  readonly writes: readonly WriteOp[];
}

/** What a node derives from its store (indexes, caches) follows the accepted commands other nodes wrote. */
export type ReplayListener = (writes: readonly ReplayedWrite[]) => void;

const acceptedKey = (shard: number): string => `cluster:accepted:${shard}`;

/** The shard's last accepted command in this store, 0 for none. */
export function acceptedSequence(storage: Storage, shard: number): number {
  const value = storage.dbs.meta.get(acceptedKey(shard));
  return typeof value === "number" ? value : 0;
}

/** A follower polls the log this often besides waking on each append (an append's hint can be missed). */
const FOLLOW_POLL_MS = 5_000;
/**
 * After an append's hint, the shard is read again this long later: NATS delivers the hint as the command is
 * published, which can be before the stream has committed it and will hand it out.
 */
const HINT_RECHECK_MS = [20, 200] as const;
/** Reads waiting for a position at once; more are refused rather than queued without a bound. */
const MAX_WAITERS = 10_000;

/** How long a transaction keeps trying to read the log before it gives up (the log's servers unreachable). */
const APPLY_RETRY_MS = 30_000;

/** A transaction too large for one command of the log: nothing was written. */
export class CommandTooLarge extends Error {}

/** The log could not be reached for a transaction; the message says whether the write may have been stored. */
export class LogUnavailable extends Error {}

/** Too many reads were already waiting for this replica to catch up. */
export class TooManyWaiters extends Error {}

/** Decisions remembered for the transactions waiting on them: far more than can be in flight at once. */
const MAX_DECISIONS = 65_536;

/**
 * One shard as this node holds it: applies its commands from the log, and runs this node's transactions of it in
 * turn, those waiting together computed one after the other into one command (two computed on the same state would
 * only make one of them lose and start again; one command for many is the log's group commit).
 */
export class ShardReplica {
  readonly #log: CommandLog;
  readonly #storage: Storage;
  readonly #shard: number;
  /** Whether each command this node applied was accepted, by sequence (oldest forgotten first). */
  readonly #decisions = new Map<number, boolean>();
  /** This node's transactions of the shard waiting for their turn; they go to the log together (#drain). */
  readonly #queue: Queued[] = [];
  #draining = false;
  /** Catch-ups, one at a time, so that the listener hears the commands in log order. */
  readonly #applyTurn = oneAtATime();
  /** Names this replica's commands in the log. */
  readonly #writer = randomUUID();
  readonly #listener: ReplayListener | undefined;
  /**
   * The last command applied here whose writes the listener has also heard: what a read may rely on. The store's
   * applied mark commits a moment earlier, before the indexes know of the command.
   */
  #heard: number;
  /** Whether a catch-up has completed since this replica was made (then trimming is bounded by its progress). */
  #caughtUp = false;
  /** Reads waiting until this store has applied a position (read-your-writes). */
  readonly #waiters = new Set<{ readonly sequence: number; readonly done: () => void }>();

  /** `listener` hears the writes of every accepted command another replica wrote, once they are committed here. */
  constructor(log: CommandLog, storage: Storage, shard: number, listener?: ReplayListener) {
    this.#log = log;
    this.#storage = storage;
    this.#shard = shard;
    this.#listener = listener;
    this.#heard = appliedSequence(storage, shard);
  }

  /** The last position applied here that reads may rely on (the indexes heard it too). */
  get heard(): number {
    return this.#heard;
  }

  /** Applies the shard's commands after the last one this store applied; each accepted or skipped as everywhere. */
  apply(upTo?: number): Promise<number> {
    return this.#applyTurn(() => this.#catchUp(upTo)).then((applied) => {
      for (const waiter of this.#waiters) if (waiter.sequence <= applied) waiter.done();
      return applied;
    });
  }

  /**
   * Keeps applying the shard's commands as they are appended, until the returned stop is called: a replica serving
   * reads of the shard follows it.
   */
  follow(): () => void {
    const wake = wakeable(
      async () => void (await this.apply()),
      // The log unreachable for now: the next append or poll tries again.
      () => undefined,
    );
    // The hint can arrive before the stream has committed the command: the shard is read again a little later.
    const rechecks = new Set<NodeJS.Timeout>();
    const recheck = (): void => {
      if (rechecks.size > 0) return;
      for (const delay of HINT_RECHECK_MS) {
        const timer = setTimeout(() => {
          rechecks.delete(timer);
          void wake();
        }, delay);
        timer.unref();
        rechecks.add(timer);
      }
    };
    const unsubscribe = this.#log.onAppended(this.#shard, () => {
      void wake();
      recheck();
    });
    const poll = setInterval(() => void wake(), FOLLOW_POLL_MS);
    poll.unref();
    void wake();
    return () => {
      unsubscribe();
      clearInterval(poll);
      for (const timer of rechecks) clearTimeout(timer);
    };
  }

  /**
   * Read-your-writes: resolves true once this store has applied the shard's command `sequence` (a write's consistency
   * token), or false after `timeoutMs` without it. Needs a follower, or a transaction, to make progress.
   */
  waitFor(sequence: number, timeoutMs: number): Promise<boolean> {
    if (this.#heard >= sequence) return Promise.resolve(true);
    if (this.#waiters.size >= MAX_WAITERS) return Promise.reject(new TooManyWaiters(`${MAX_WAITERS} reads already wait for shard ${this.#shard}`));
    return new Promise((resolve) => {
      const waiter = {
        sequence,
        done: () => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        resolve(this.#heard >= sequence);
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  /** `upTo`: a position known to be stored (this node's own append), read without asking for the shard's last. */
  #catchUp(upTo: number | undefined): Promise<number> {
    const storage = this.#storage;
    const shard = this.#shard;
    let replayed: ReplayedWrite[] = [];
    const apply = (logged: LoggedCommand): void => {
      const command = codec.unpack(logged.data) as WriteCommand;
      const accepted = command.basedOn === acceptedSequence(storage, shard);
      this.#decide(logged.sequence, accepted);
      replayed = [];
      if (!accepted) return;
      const observe = this.#listener !== undefined && command.writer !== this.#writer ? (write: ReplayedWrite) => replayed.push(write) : undefined;
      storage.replayWrites(command.writes, observe);
      storage.dbs.meta.put(acceptedKey(shard), logged.sequence);
    };
    // Each command is committed before the next is applied: `replayed` is always the last one's.
    const committed = (logged: LoggedCommand): void => {
      if (replayed.length > 0) this.#listener?.(replayed);
      replayed = [];
      this.#heard = logged.sequence;
    };
    // Once caught up, this node's progress bounds the trimming (log-trimming.ts): its reads need not check for it.
    const options = { checkTruncation: !this.#caughtUp, ...(upTo === undefined ? {} : { upTo }) };
    return catchUp(this.#log, storage, shard, apply, committed, options).then((applied) => {
      this.#caughtUp = true;
      return applied;
    });
  }

  /** `apply`, tried again while the log is unreachable (a NATS server lost, a stream electing its leader). */
  async #applyRetrying(failure: string, upTo?: number): Promise<number> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.apply(upTo);
      } catch (e: unknown) {
        if (Date.now() - started > APPLY_RETRY_MS) throw new LogUnavailable(failure, { cause: e });
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * attempt, 1_000)));
      }
    }
  }

  #decide(sequence: number, accepted: boolean): void {
    this.#decisions.set(sequence, accepted);
    if (this.#decisions.size > MAX_DECISIONS) this.#decisions.delete(this.#decisions.keys().next().value as number);
  }

  /**
   * Runs `fn` as a transaction of the shard replicated through the log: resolves once the log holds it on a quorum
   * and this store has applied it, with `fn`'s result and the command's sequence (the consistency token of the write;
   * 0 when `fn` wrote nothing, so that nothing was appended). `sequences` numbers what `fn` creates in the shard.
   */
  transaction<T>(fn: () => T, sequences?: SequenceStride): Promise<{ result: T; sequence: number }> {
    return new Promise<{ result: T; sequence: number }>((resolve, reject) => {
      if (this.#queue.length >= MAX_QUEUED) {
        reject(new LogUnavailable(`shard ${this.#shard}: ${MAX_QUEUED} transactions are already waiting for the log; retry`));
        return;
      }
      this.#queue.push({ fn, sequences, resolve: resolve as Queued["resolve"], reject });
      void this.#drain();
    });
  }

  /** Runs the queued transactions, those queued together as one command (group commit through the log). */
  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#queue.length > 0) await this.#transactBatch(this.#queue.splice(0, MAX_BATCH));
    } finally {
      this.#draining = false;
    }
  }

  /**
   * Computes each transaction of `batch` on top of the ones before it (a failing one is refused alone), appends their
   * writes as one command, and settles every transaction of the batch once it is applied. On a conflict all of them
   * are computed again on the newer state.
   */
  async #transactBatch(batch: readonly Queued[]): Promise<void> {
    const id = randomUUID();
    let live: Queued[] = [...batch];
    try {
      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
        await this.#applyRetrying(`shard ${this.#shard}: the log cannot be read; nothing was written`);
        const expected = appliedSequence(this.#storage, this.#shard);
        const basedOn = acceptedSequence(this.#storage, this.#shard);
        const computed: { readonly item: Queued; readonly result: unknown }[] = [];
        let writes: WriteOp[] = [];
        for (const [i, item] of live.entries()) {
          // A large batch leaves the rest for the next command: each transaction is computed on all the writes before it.
          if (writes.length > MAX_BATCH_WRITES) {
            this.#queue.unshift(...live.slice(i));
            break;
          }
          try {
            const captured = await this.#storage.captureWrites(item.fn, item.sequences, writes);
            computed.push({ item, result: captured.result });
            writes = writes.concat(captured.writes);
          } catch (e: unknown) {
            item.reject(e);
          }
        }
        live = computed.map((c) => c.item);
        // Nothing to replicate (transactions that found nothing to change): no command, no position to wait for.
        if (writes.length === 0) {
          for (const { item, result } of computed) item.resolve({ result, sequence: 0 });
          return;
        }
        const command = codec.pack({ basedOn, writer: this.#writer, writes } satisfies WriteCommand);
        if (command.length > this.#log.maxCommandBytes) {
          if (live.length > 1) {
            // Too large together: the first alone, the others after it.
            this.#queue.unshift(...live.slice(1));
            live = live.slice(0, 1);
            continue;
          }
          throw new CommandTooLarge(`the write is ${command.length} bytes once encoded for the cluster's log, which takes at most ${this.#log.maxCommandBytes} (the NATS servers' max_payload): write less at once`);
        }
        let sequence: number;
        try {
          sequence = await appendRetrying(this.#log, this.#shard, command, `${id}:${attempt}`, expected);
        } catch (e: unknown) {
          if (e instanceof ShardMovedOn) continue;
          throw new LogUnavailable(`shard ${this.#shard}: the log did not acknowledge the write, which may or may not have been stored (${String(e)})`, { cause: e });
        }
        // The command is in the log: it is applied, here as everywhere, however long the log takes to be readable again.
        const unread = `shard ${this.#shard}: the write is in the log at ${sequence} but could not be read back yet; it will be applied`;
        // Read up to the command itself (no question about the shard's last); once more in full should that stop short.
        if ((await this.#applyRetrying(unread, sequence)) < sequence) await this.#applyRetrying(unread);
        // Skipped by every node when another command was accepted after `basedOn`: compute again on the newer state.
        const accepted = this.#decisions.get(sequence);
        this.#decisions.delete(sequence);
        if (accepted === true) {
          for (const { item, result } of computed) item.resolve({ result, sequence });
          return;
        }
        // Computing again without knowing would risk applying the transactions twice.
        if (accepted === undefined) throw new Error(`shard ${this.#shard}: command ${sequence} was applied without its outcome being seen`);
      }
      throw new Error(`shard ${this.#shard}: the transaction lost ${MAX_ATTEMPTS} conflicts in a row`);
    } catch (e: unknown) {
      for (const item of live) item.reject(e);
    }
  }
}

/** Runs the tasks given to it one at a time, in order; a task that fails does not stop the next. */
function oneAtATime(): <T>(task: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const run = last.then(task);
    last = run.catch(() => undefined);
    return run;
  };
}

/** Transport failures of one append retried before the transaction fails (the same message: stored at most once). */
const APPEND_RETRIES = 10;

/** Appends, sending the same message again (same id) when the acknowledgement is lost, so it is stored once. */
async function appendRetrying(log: CommandLog, shard: number, data: Uint8Array, id: string, expected: number): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await log.append(shard, data, id, expected);
    } catch (e: unknown) {
      if (e instanceof ShardMovedOn || attempt >= APPEND_RETRIES) throw e;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
