// Control events in clustered mode: a subscriber may be connected to any node, so each node appends the events of its
// writes to the events stream (`<cluster>_EVENTS.<node id>`: kept, bounded by age and count, in the same JetStream
// cluster as the log), and every node hands the events other nodes appended to its own subscribers. Both sides go
// through the stream, not around it: a node's events are appended one after another, each acknowledged (retried while
// the stream elects a leader), and each node reads the stream on from the last event it delivered — woken by a plain
// subscription, and polling — so an event is late, not lost, when a NATS server or the stream's leader fails.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { DiscardPolicy, RetentionPolicy, StorageType, jetstream, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { ControlEvent } from "../events/event-bus.js";
import type { Logger } from "../platform/logger.js";
import { wakeable } from "../platform/wakeable.js";
import { createRetrying, ensureStream, nanos, streamManager } from "./command-log.js";

/** Events kept in the stream at most: for an hour, and at most this many (the oldest go first). */
const MAX_AGE_MS = 3_600_000;
const MAX_EVENTS = 100_000;
/** Events of this node waiting to be appended, at most; past it the oldest are dropped (and logged). */
const MAX_PENDING = 10_000;
/** How often a node reads the stream on without being woken: what a wake-up missed while disconnected arrives then. */
const POLL_MS = 1_000;

export class EventRelay {
  readonly #client: JetStreamClient;
  readonly #manager: JetStreamManager;
  readonly #connection: NatsConnection;
  readonly #stream: string;
  readonly #nodeId: string;
  readonly #logger: Logger;
  readonly #pending: string[] = [];
  #sending = false;
  #closed = false;
  readonly #stops: (() => void)[] = [];

  private constructor(connection: NatsConnection, manager: JetStreamManager, stream: string, nodeId: string, logger: Logger) {
    this.#connection = connection;
    this.#client = jetstream(connection);
    this.#manager = manager;
    this.#stream = stream;
    this.#nodeId = nodeId;
    this.#logger = logger;
  }

  static async open(connection: NatsConnection, stream: string, nodeId: string, replicas: number, logger: Logger): Promise<EventRelay> {
    const manager = await streamManager(connection);
    await ensureStream(manager, {
      name: stream,
      subjects: [`${stream}.*`],
      storage: StorageType.File,
      num_replicas: replicas,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(MAX_AGE_MS),
      max_msgs: MAX_EVENTS,
    });
    return new EventRelay(connection, manager, stream, nodeId, logger);
  }

  /** Appends an event of this node's, after the ones before it (not waited for: the write it reports is durable). */
  send(event: ControlEvent): void {
    if (this.#pending.length >= MAX_PENDING) {
      this.#pending.shift();
      this.#logger.warn({ pending: MAX_PENDING }, "the events stream is not keeping up; the oldest pending event was dropped");
    }
    this.#pending.push(JSON.stringify(event));
    if (!this.#sending) void this.#sendPending();
  }

  async #sendPending(): Promise<void> {
    this.#sending = true;
    try {
      for (let next = this.#pending[0]; next !== undefined && !this.#closed; next = this.#pending[0]) {
        try {
          await createRetrying(() => this.#client.publish(`${this.#stream}.${this.#nodeId}`, next));
        } catch (e: unknown) {
          this.#logger.error({ err: e }, "an event could not be appended to the events stream; other nodes' subscribers miss it");
        }
        this.#pending.shift();
      }
    } finally {
      this.#sending = false;
    }
  }

  /** Hands every event another node appends from now on to `deliver`, in stream order. */
  async listen(deliver: (event: ControlEvent) => void): Promise<void> {
    const own = `${this.#stream}.${this.#nodeId}`;
    let position = (await createRetrying(() => this.#manager.streams.info(this.#stream))).state.last_seq;
    const readOn = async (): Promise<void> => {
      for (;;) {
        const next = { seq: position + 1, next_by_subj: `${this.#stream}.*` } as unknown as { seq: number };
        const message = await createRetrying(() => this.#manager.streams.getMessage(this.#stream, next));
        if (message === null || this.#closed) return;
        position = message.seq;
        if (message.subject === own) continue;
        const event = parseEvent(new TextDecoder().decode(message.data));
        if (event !== undefined) deliver(event);
      }
    };
    const wake = wakeable(readOn, (e) => this.#logger.warn({ err: e }, "reading other nodes' events failed; the next poll reads on"));
    const subscription: Subscription = this.#connection.subscribe(`${this.#stream}.*`, { callback: () => void wake() });
    const timer = setInterval(() => void wake(), POLL_MS);
    timer.unref();
    this.#stops.push(
      () => subscription.unsubscribe(),
      () => clearInterval(timer),
    );
  }

  close(): void {
    this.#closed = true;
    for (const stop of this.#stops.splice(0)) stop();
  }
}

function parseEvent(text: string): ControlEvent | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const strings = ["id", "type", "runId", "agentId", "payload", "createdAt"].every((field) => typeof value[field] === "string");
    return strings && Number.isInteger(value["owner"]) ? (value as unknown as ControlEvent) : undefined;
  } catch {
    return undefined;
  }
}
