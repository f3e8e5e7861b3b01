// Control events in clustered mode: a subscriber may be connected to any node, so each node publishes the events of
// its writes on a subject of the events stream (`<cluster>_EVENTS.<node id>`: kept, bounded by age and count, in the same
// JetStream cluster as the log), and every node hands the events other nodes published to its own subscribers as
// they arrive. Live delivery, like a single server's: a node disconnected meanwhile does not replay what it missed.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { DiscardPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { ControlEvent } from "../events/event-bus.js";
import { ensureStream, nanos, streamManager } from "./command-log.js";

/** Events kept in the stream at most: for an hour, and at most this many (the oldest go first). */
const MAX_AGE_MS = 3_600_000;
const MAX_EVENTS = 100_000;

export class EventRelay {
  readonly #connection: NatsConnection;
  readonly #stream: string;
  readonly #nodeId: string;
  #subscription: Subscription | undefined;

  private constructor(connection: NatsConnection, stream: string, nodeId: string) {
    this.#connection = connection;
    this.#stream = stream;
    this.#nodeId = nodeId;
  }

  static async open(connection: NatsConnection, stream: string, nodeId: string, replicas: number): Promise<EventRelay> {
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
    return new EventRelay(connection, stream, nodeId);
  }

  /** Publishes an event of this node's (not waiting for the stream: the write it reports is already durable). */
  send(event: ControlEvent): void {
    this.#connection.publish(`${this.#stream}.${this.#nodeId}`, JSON.stringify(event));
  }

  /** Hands every event another node publishes to `deliver`, from now on. */
  listen(deliver: (event: ControlEvent) => void): void {
    const own = `${this.#stream}.${this.#nodeId}`;
    this.#subscription = this.#connection.subscribe(`${this.#stream}.*`, {
      callback: (error, message) => {
        if (error !== null || message.subject === own) return;
        const event = parseEvent(message.string());
        if (event !== undefined) deliver(event);
      },
    });
  }

  close(): void {
    this.#subscription?.unsubscribe();
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
