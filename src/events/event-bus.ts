// In-process fan-out of control events to live subscribers, in publish order, with a bounded queue each and caps on
// how many subscriptions an API key, and the server, may hold open.
import { Code, ConnectError } from "@connectrpc/connect";
import { DeliveryQueue } from "./delivery-queue.js";
import { SubscriptionSlots, type ReleaseSlot, type SubscriptionLimits } from "./subscription-slots.js";

export interface ControlEvent {
  readonly id: string;
  readonly type: string;
  /** Auth user id of the run's owner. */
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  /** JSON object text. */
  readonly payload: string;
  readonly createdAt: string;
}

export interface EventFilter {
  /** Owner whose events are delivered; undefined delivers every owner's (admins). */
  readonly owner: number | undefined;
  /** Run to watch; "" for every run. */
  readonly runId: string;
  /** Exact types, or prefixes ending in "." for patterns like `lesson.*`; empty for all. */
  readonly types: readonly string[];
}

/**
 * The last event of every stream when the server shuts down: always sent, whatever the stream's filter, after the
 * events queued before it; the stream then ends normally.
 */
export const SHUTDOWN_EVENT_TYPE = "server.shutdown";

/** A subscriber that falls this far behind is cut off rather than let memory grow without bound. */
export const MAX_PENDING_EVENTS = 1000;

function matches(filter: EventFilter, event: ControlEvent): boolean {
  if (filter.owner !== undefined && filter.owner !== event.owner) return false;
  if (filter.runId !== "" && filter.runId !== event.runId) return false;
  if (filter.types.length === 0) return true;
  return filter.types.some((t) => (t.endsWith(".") ? event.type.startsWith(t) : event.type === t));
}

export class Subscription {
  readonly filter: EventFilter;
  readonly #queue = new DeliveryQueue<ControlEvent>(MAX_PENDING_EVENTS);
  readonly #onClose: () => void;

  constructor(filter: EventFilter, onClose: () => void) {
    this.filter = filter;
    this.#onClose = onClose;
  }

  /** Ends the stream and frees the subscription's slot. Idempotent. */
  close(): void {
    this.#queue.close();
    this.#onClose();
  }

  /** Queues `event` as the last one: the stream ends after it. */
  finish(event: ControlEvent): void {
    this.#queue.finish(event);
  }

  push(event: ControlEvent): void {
    this.#queue.push(event, () => new ConnectError(`subscriber fell more than ${MAX_PENDING_EVENTS} events behind`, Code.ResourceExhausted));
  }

  /** Queued and future events until the signal aborts or the subscription is closed. */
  events(signal: AbortSignal): AsyncGenerator<ControlEvent> {
    return this.#queue.drain(signal);
  }
}

export class EventBus {
  readonly #subscriptions = new Set<Subscription>();
  readonly #slots: SubscriptionSlots;
  #sequence = 0;
  #shutDown = false;
  #relay: ((event: ControlEvent) => void) | undefined;
  #idSuffix = "";

  constructor(limits?: SubscriptionLimits) {
    this.#slots = new SubscriptionSlots("control event subscriptions", limits);
  }

  publish(event: Omit<ControlEvent, "id" | "createdAt">): void {
    // Nobody to deliver to (the usual case during a bulk write): the id is still taken, nothing else is built.
    if (this.#subscriptions.size === 0 && this.#relay === undefined) {
      this.#sequence++;
      return;
    }
    const full: ControlEvent = { ...event, id: `evt_${(++this.#sequence).toString(36)}${this.#idSuffix}`, createdAt: new Date().toISOString() };
    this.#relay?.(full);
    this.deliver(full);
  }

  /** Hands an event to the matching subscribers: one published here, or (clustered) relayed from another node. */
  deliver(event: ControlEvent): void {
    for (const subscription of this.#subscriptions) {
      if (matches(subscription.filter, event)) subscription.push(event);
    }
  }

  /**
   * Clustered mode: every event published here is also handed to `relay`, which carries it to the other nodes'
   * subscribers; ids end in `_<node id>`, so that events of different nodes never share one.
   */
  relayTo(relay: (event: ControlEvent) => void, nodeId: string): void {
    this.#relay = relay;
    this.#idSuffix = `_${nodeId}`;
  }

  /**
   * Starts queueing events that match the filter; the caller must close the subscription. `keyId`: the API key
   * whose slot it takes (in-process listeners pass none); throws RESOURCE_EXHAUSTED when that key, or the server,
   * holds as many subscriptions as it may.
   */
  open(filter: EventFilter, keyId?: string): Subscription {
    if (this.#shutDown) throw new ConnectError("the server is shutting down; subscribe again once it is back", Code.Unavailable);
    const release: ReleaseSlot = keyId === undefined ? () => undefined : this.#slots.acquire(keyId);
    const subscription: Subscription = new Subscription(filter, () => {
      this.#subscriptions.delete(subscription);
      release();
    });
    this.#subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Shutdown: every open subscription gets a final `server.shutdown` event after those already queued for it, and
   * its stream ends; new subscriptions are refused (UNAVAILABLE).
   */
  shutdown(): void {
    this.#shutDown = true;
    for (const subscription of this.#subscriptions) {
      subscription.finish({
        id: `evt_${(++this.#sequence).toString(36)}`,
        type: SHUTDOWN_EVENT_TYPE,
        owner: subscription.filter.owner ?? 0,
        runId: "",
        agentId: "",
        payload: JSON.stringify({ reason: "shutting_down" }),
        createdAt: new Date().toISOString(),
      });
    }
  }

  /** Whether an event published now may reach anyone: a subscriber here, or (clustered) on another node. */
  get listened(): boolean {
    return this.#subscriptions.size > 0 || this.#relay !== undefined;
  }
}
