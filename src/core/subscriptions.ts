// Live core-event subscriptions: each has an unguessable id, an owner, a filter and a bounded queue, and is
// registered server-wide until its stream ends, within per-key and server-wide caps. Events reach a subscription
// only when its caller may read them.
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { AccessControl } from "../acl/access-control.js";
import type { Principal } from "../auth/principal.js";
import { cosine } from "../retrieval/embedder.js";
import type { CoreEvent, CoreEventBus } from "./core-events.js";
import { DeliveryQueue } from "../events/delivery-queue.js";
import { SubscriptionSlots, type SubscriptionLimits } from "../events/subscription-slots.js";

/** The one question the registry asks of the access grants. */
export type ReadCheck = Pick<AccessControl, "allows">;

export type CoreFilter =
  | { readonly kind: "all" }
  | { readonly kind: "node"; readonly nodeId: bigint }
  | { readonly kind: "semantic"; readonly vector: Float32Array; readonly threshold: number }
  | { readonly kind: "session"; readonly sessionId: string };

export type CoreFilterType = CoreFilter["kind"];

/** An event matched by a subscription, with the similarity that let it through a `semantic` filter. */
export interface Delivery {
  readonly event: CoreEvent;
  readonly similarity: number | undefined;
}

const SIMILARITY_EPSILON = 1e-6;

/**
 * A subscriber this far behind is ended rather than let its queue grow without bound. One commit can publish a
 * whole batch_insert (1000 events) at once, so the bound leaves room for several such bursts.
 */
export const MAX_PENDING_CORE_EVENTS = 10_000;

/** Whether the caller may see the event: node events by read access to the node's run and lane; scratchpad
 * events only by their owner (or an admin). */
function readable(acl: ReadCheck, caller: Principal, event: CoreEvent): boolean {
  if (event.type === "memory.added" || event.runId === undefined) return caller.role === "admin" || caller.userId === event.owner;
  return acl.allows(caller, event.owner, event.runId, event.lane ?? "", "read");
}

/** The delivery for this filter, or undefined when the event does not match it. */
function match(filter: CoreFilter, runId: string, event: CoreEvent): Delivery | undefined {
  // Scratchpad events have no run, so a run filter leaves them out.
  if (runId !== "" && event.runId !== runId) return undefined;
  switch (filter.kind) {
    case "all":
      return { event, similarity: undefined };
    case "node":
      return event.nodeId === filter.nodeId && event.type !== "memory.added" ? { event, similarity: undefined } : undefined;
    case "session":
      return event.type === "memory.added" && event.sessionId === filter.sessionId ? { event, similarity: undefined } : undefined;
    case "semantic": {
      if ((event.type !== "node.inserted" && event.type !== "node.updated") || event.vector === undefined) return undefined;
      const similarity = cosine(filter.vector, event.vector);
      // Float32 vectors put identical texts a hair below 1, so the floor allows for rounding.
      return similarity >= filter.threshold - SIMILARITY_EPSILON ? { event, similarity } : undefined;
    }
  }
}

export class CoreSubscription {
  readonly id: string;
  readonly caller: Principal;
  readonly filter: CoreFilter;
  readonly runId: string;
  readonly #queue = new DeliveryQueue<Delivery>(MAX_PENDING_CORE_EVENTS);
  readonly #onClose: () => void;

  constructor(id: string, caller: Principal, filter: CoreFilter, runId: string, onClose: () => void) {
    this.id = id;
    this.caller = caller;
    this.filter = filter;
    this.runId = runId;
    this.#onClose = onClose;
  }

  /** Unregisters the subscription; its stream ends normally once it notices. Idempotent. */
  close(): void {
    if (this.#queue.closed) return;
    this.#queue.close();
    this.#onClose();
  }

  /** Queues `event` as the last delivery: the stream ends after it. */
  finish(event: CoreEvent): void {
    this.#queue.finish({ event, similarity: undefined });
  }

  offer(event: CoreEvent): void {
    if (this.#queue.closed) return;
    const delivery = match(this.filter, this.runId, event);
    if (delivery === undefined) return;
    // Writers never wait for a subscriber: one that cannot keep up is ended with an error as its last event.
    this.#queue.push(
      delivery,
      () =>
        new ConnectError(
          `subscription ${this.id} fell more than ${MAX_PENDING_CORE_EVENTS} events behind and was ended; subscribe again`,
          Code.ResourceExhausted,
        ),
    );
    if (this.#queue.closed) this.#onClose();
  }

  /** Queued and future deliveries until the signal aborts or the subscription is closed. */
  deliveries(signal: AbortSignal): AsyncGenerator<Delivery> {
    return this.#queue.drain(signal);
  }
}

export class SubscriptionRegistry {
  readonly #acl: ReadCheck;
  /** In creation order, so a caller's ids list oldest first. */
  readonly #byId = new Map<string, CoreSubscription>();
  readonly #slots: SubscriptionSlots;
  #shutDown = false;

  constructor(bus: CoreEventBus, acl: ReadCheck, limits?: SubscriptionLimits) {
    this.#acl = acl;
    this.#slots = new SubscriptionSlots("core event subscriptions", limits);
    bus.listen((event) => this.#publish(event));
  }

  #publish(event: CoreEvent): void {
    for (const subscription of this.#byId.values()) {
      if (readable(this.#acl, subscription.caller, event)) subscription.offer(event);
    }
  }

  /**
   * Registers a subscription; events committed from now on are queued for it. The caller must close it, which frees
   * its slot. Throws RESOURCE_EXHAUSTED when the caller's key, or the server, holds as many as it may.
   */
  open(caller: Principal, filter: CoreFilter, runId: string): CoreSubscription {
    if (this.#shutDown) throw new ConnectError("the server is shutting down; subscribe again once it is back", Code.Unavailable);
    const release = this.#slots.acquire(caller.keyId);
    const id = `sub_${randomBytes(18).toString("base64url")}`;
    const subscription: CoreSubscription = new CoreSubscription(id, caller, filter, runId, () => {
      this.#byId.delete(id);
      release();
    });
    this.#byId.set(id, subscription);
    return subscription;
  }

  /**
   * Shutdown: every open subscription gets a final `server.shutdown` event after those already queued for it, and
   * its stream ends; new subscriptions are refused (UNAVAILABLE).
   */
  shutdown(): void {
    this.#shutDown = true;
    for (const subscription of this.#byId.values()) subscription.finish({ type: "server.shutdown", owner: subscription.caller.userId });
  }

  /** The ids of one user's active subscriptions, oldest first. */
  idsOf(userId: number): string[] {
    return [...this.#byId.values()].filter((s) => s.caller.userId === userId).map((s) => s.id);
  }

  /** Active subscriptions of every user. */
  get total(): number {
    return this.#byId.size;
  }

  /** Closes one of a user's subscriptions; false when the user has none with that id. */
  close(userId: number, id: string): boolean {
    const subscription = this.#byId.get(id);
    if (subscription === undefined || subscription.caller.userId !== userId) return false;
    subscription.close();
    return true;
  }
}
