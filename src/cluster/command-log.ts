// The replicated log of clustered mode (issue 15): one JetStream stream per shard (`<prefix>_<shard>`, subject
// `<prefix>.<shard>`), file storage, three replicas (Raft in the NATS servers: no consensus of our own). A command
// appended is acknowledged only once JetStream has it on a quorum of replicas, so it survives the loss of one server;
// each Engram node reads the shards it serves in stream order and applies them (shard-applier.ts).
//
// One stream per shard, not one for all: trimming a shard then purges its whole stream up to a position, never a
// purge filtered to one subject, which nats-server before 2.9.21 replays on a restarted server as a purge of every
// subject (nats-io/nats-server#4196: a node behind would silently miss other shards' commands). Each shard's
// truncation mark is the one message of its subject in `<prefix>_MARKS`.
//
// Appends are idempotent: each carries an id, and JetStream drops a repeat of an id within its duplicate window, so a
// client that lost the acknowledgement (a server killed mid-publish) appends again and the command is stored once.
// An append may also name the shard's last sequence it expects: it then fails if another command got there first,
// which lets a writer compute a command against the state it has applied and retry on a conflict.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, DeliverPolicy, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";

export interface CommandLogOptions {
  /** NATS server URLs (any of the cluster's; the client fails over between them). */
  readonly servers: readonly string[];
  /** The prefix of the streams' names and subjects. */
  readonly stream?: string;
  readonly replicas?: number;
  /** How long JetStream remembers append ids to drop repeats, in ms. */
  readonly duplicateWindowMs?: number;
}

export interface LoggedCommand {
  /** The command's position in its shard's stream: the consistency token a write returns. */
  readonly sequence: number;
  readonly shard: number;
  readonly data: Uint8Array;
}

export interface ReadOptions {
  /** Read up to this position (a command the reader knows is stored) instead of asking the stream for its last. */
  readonly upTo?: number;
  /**
   * False: skip the check for commands dropped after `after` (one request fewer). Only for a reader whose position
   * the trimming already respects: a node that has caught up once and recorded its progress (log-trimming.ts).
   */
  readonly checkTruncation?: boolean;
  /** Commands fetched at once from a consumer, for long tails. */
  readonly pageSize?: number;
}

/** An append that named the shard's last sequence it expected, and another command got there first. */
export class ShardMovedOn extends Error {}

/** A read from a position the log no longer holds the commands after: the reader must start from a snapshot. */
export class LogTruncated extends Error {}

const DEFAULT_STREAM = "ENGRAM_LOG";
/**
 * How long a request about the stream (its last sequence, a message) waits for an answer before it is asked again:
 * while the cluster replaces a lost server, an unanswered request is better retried early than waited on.
 */
const API_TIMEOUT_MS = 2_000;
/** A tail at most this long is read without a consumer (one request per command; server 2.9's next_by_subj). */
const SHORT_TAIL = 64;
/** Empty fetches (2 s each) in a row before a read gives up on the log. */
const READ_ATTEMPTS = 10;
const NANOS_PER_MS = 1_000_000;

/** JetStream's durations (stream ages, duplicate windows) are in nanoseconds. */
export const nanos = (ms: number): number => ms * NANOS_PER_MS;

/** A JetStream manager whose requests time out after API_TIMEOUT_MS, obtained once JetStream answers. */
export function streamManager(connection: NatsConnection): Promise<JetStreamManager> {
  return createRetrying(() => jetstreamManager(connection, { timeout: API_TIMEOUT_MS }));
}

export class CommandLog {
  readonly #connection: NatsConnection;
  readonly #client: JetStreamClient;
  readonly #manager: JetStreamManager;
  /** The prefix of every stream's name and subjects. */
  readonly #stream: string;
  readonly #options: { readonly replicas: number; readonly duplicateWindowMs: number };
  /** Each shard's stream, made sure of once. */
  readonly #shardStreams = new Map<number, Promise<string>>();

  private constructor(connection: NatsConnection, client: JetStreamClient, manager: JetStreamManager, stream: string, options: { readonly replicas: number; readonly duplicateWindowMs: number }) {
    this.#connection = connection;
    this.#client = client;
    this.#manager = manager;
    this.#stream = stream;
    this.#options = options;
  }

  /** Connects and makes sure the stream exists with its replicas (creating it is idempotent across nodes). */
  static async open(options: CommandLogOptions): Promise<CommandLog> {
    const stream = options.stream ?? DEFAULT_STREAM;
    const connection = await connect({ servers: [...options.servers], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    try {
      const manager = await streamManager(connection);
      const replicas = options.replicas ?? 3;
      await ensureStream(manager, { name: `${stream}_MARKS`, subjects: [`${stream}.truncated.*`], storage: StorageType.File, num_replicas: replicas, max_msgs_per_subject: 1 });
      return new CommandLog(connection, jetstream(connection), manager, stream, { replicas, duplicateWindowMs: options.duplicateWindowMs ?? 120_000 });
    } catch (e: unknown) {
      await connection.close();
      throw e;
    }
  }

  /** The largest command the NATS servers accept (their `max_payload`, 1 MiB unless configured). */
  get maxCommandBytes(): number {
    return this.#connection.info?.max_payload ?? 1_048_576;
  }

  #subject(shard: number): string {
    return `${this.#stream}.${shard}`;
  }

  /** The shard's stream, created on first use (idempotent across nodes). */
  #streamOf(shard: number): Promise<string> {
    let ensured = this.#shardStreams.get(shard);
    if (ensured === undefined) {
      const name = `${this.#stream}_${shard}`;
      ensured = ensureStream(this.#manager, {
        name,
        subjects: [this.#subject(shard)],
        storage: StorageType.File,
        num_replicas: this.#options.replicas,
        duplicate_window: nanos(this.#options.duplicateWindowMs),
      }).then(() => name);
      ensured.catch(() => this.#shardStreams.delete(shard));
      this.#shardStreams.set(shard, ensured);
    }
    return ensured;
  }

  /**
   * Appends a command to a shard once JetStream has it on a quorum, and returns its stream sequence. `id` makes the
   * append idempotent (a repeat returns the first one's sequence); `expectedLast` (the shard's last sequence the
   * caller has seen, 0 for none) makes it fail with ShardMovedOn if the shard has moved on.
   */
  async append(shard: number, data: Uint8Array, id: string, expectedLast?: number): Promise<number> {
    await this.#streamOf(shard);
    try {
      const ack = await this.#client.publish(this.#subject(shard), data, {
        msgID: id,
        ...(expectedLast === undefined ? {} : { expect: { lastSubjectSequence: expectedLast } }),
      });
      return ack.seq;
    } catch (e: unknown) {
      if (expectedLast !== undefined && /wrong last sequence/i.test(String((e as Error).message))) throw new ShardMovedOn(`shard ${shard} moved on past ${expectedLast}`);
      throw e;
    }
  }

  /** Whether any command was ever appended to any shard (a trimmed log was written). */
  async everWritten(): Promise<boolean> {
    const names = await createRetrying(async () => {
      const found: string[] = [];
      for await (const name of this.#manager.streams.names(`${this.#stream}.*`)) found.push(name);
      return found;
    });
    for (const name of names) {
      if ((await createRetrying(() => this.#manager.streams.info(name))).state.last_seq > 0) return true;
    }
    return false;
  }

  /** The sequence of a shard's last command, 0 when it has none. */
  async lastSequence(shard: number): Promise<number> {
    // null when the shard has no command; any other failure is thrown, never read as an empty shard.
    const stream = await this.#streamOf(shard);
    const message = await createRetrying(() => this.#manager.streams.getMessage(stream, { last_by_subj: this.#subject(shard) }));
    return message?.seq ?? 0;
  }

  /**
   * Drops the shard's commands up to `upTo` (a snapshot holds their effects), except its last one, after recording the
   * mark on a subject of its own: a reader from before the mark is told so (LogTruncated) instead of silently missing
   * commands.
   */
  async truncate(shard: number, upTo: number): Promise<void> {
    // The shard's last command always stays: JetStream checks an append's expected last sequence against it.
    const dropTo = Math.min(upTo, (await this.lastSequence(shard)) - 1);
    if (dropTo <= (await this.truncatedUpTo(shard))) return;
    // The marks stream keeps one message per subject: the newest mark replaces the older.
    await this.#client.publish(this.#markSubject(shard), new TextEncoder().encode(String(dropTo)));
    await this.#manager.streams.purge(await this.#streamOf(shard), { seq: dropTo + 1 });
  }

  /** The position up to which the shard's commands were dropped, 0 when none were. */
  async truncatedUpTo(shard: number): Promise<number> {
    const mark = await createRetrying(() => this.#manager.streams.getMessage(`${this.#stream}_MARKS`, { last_by_subj: this.#markSubject(shard) }));
    return mark === null ? 0 : Number(new TextDecoder().decode(mark.data)) || 0;
  }

  #markSubject(shard: number): string {
    return `${this.#stream}.truncated.${shard}`;
  }

  /**
   * The shard's commands after `after`, in stream order, up to the last one stored when the read began: the tail a
   * node applies to catch up. Reads in pages of `pageSize`. Throws LogTruncated when commands after `after` were
   * dropped.
   */
  async *read(shard: number, after: number, options: ReadOptions = {}): AsyncGenerator<LoggedCommand> {
    const pageSize = options.pageSize ?? 256;
    const last = options.upTo ?? (await this.lastSequence(shard));
    if (options.checkTruncation !== false) {
      const truncated = await this.truncatedUpTo(shard);
      if (after < truncated) throw new LogTruncated(`shard ${shard}: the log holds only the commands after ${truncated}, the reader is at ${after}; start from a snapshot`);
    }
    let position = after;
    const stream = await this.#streamOf(shard);
    // A short tail (a follower's usual read) is fetched message by message from the stream itself: no consumer to
    // create and delete, which can take a request timeout each while the cluster has lost a server.
    if (last - after <= SHORT_TAIL) {
      while (position < last) {
        const next = { seq: position + 1, next_by_subj: this.#subject(shard) } as unknown as { seq: number };
        const message = await createRetrying(() => this.#manager.streams.getMessage(stream, next));
        if (message === null || message.seq > last) return;
        position = message.seq;
        yield { sequence: message.seq, shard, data: message.data };
      }
      return;
    }
    // A fetch can come back empty while the stream's leader changes (a server lost): read on from where it stopped.
    for (let emptyFetches = 0; position < last; ) {
      const start = position + 1;
      const consumer = await createRetrying(() => this.#client.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start }));
      try {
        while (position < last) {
          let got = 0;
          for await (const message of await consumer.fetch({ max_messages: pageSize, expires: 2_000 })) {
            got++;
            position = message.seq;
            yield { sequence: message.seq, shard, data: message.data };
            if (position >= last) break;
          }
          if (got > 0) continue;
          if (++emptyFetches >= READ_ATTEMPTS) throw new Error(`shard ${shard}: the log gave nothing after ${position} though it holds up to ${last}`);
          break;
        }
      } finally {
        await consumer.delete().catch(() => undefined);
      }
    }
  }

  /**
   * Calls `wake` whenever a command is appended to the shard (a plain subscription to its subject: a hint, which may
   * be missed while disconnected; followers also poll). Returns the unsubscribe.
   */
  onAppended(shard: number, wake: () => void): () => void {
    const subscription = this.#connection.subscribe(this.#subject(shard), { callback: () => wake() });
    return () => subscription.unsubscribe();
  }

  async close(): Promise<void> {
    await this.#connection.drain();
  }
}

/** Stream creation attempts: just after a cluster forms (or loses a server) JetStream may time out a while. */
const CREATE_ATTEMPTS = 8;

/**
 * Runs `create` (of a stream, bucket or object store, or a read of the stream's state) until it succeeds: just after
 * a cluster forms, or while a stream elects a leader, JetStream answers "not enabled" or times out for a while.
 */
export async function createRetrying<T>(create: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (e: unknown) {
      if (attempt >= CREATE_ATTEMPTS) throw e;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}

/** Creates a stream unless it exists; several nodes may race to it, and the first to succeed wins. */
export async function ensureStream(manager: JetStreamManager, config: Parameters<JetStreamManager["streams"]["add"]>[0] & { name: string }): Promise<void> {
  await createRetrying(async () => {
    try {
      await manager.streams.info(config.name);
      return;
    } catch {
      // Not there yet, or JetStream not answering yet: try to create it.
    }
    await manager.streams.add(config);
  });
}
