// Events of the core data plane, published after the write that caused them commits, in commit order.
// The pubsub subscriptions listen here; the node and scratchpad stores publish.

/**
 * `server.shutdown` is never published on the bus: at shutdown the subscription registry sends it to each open
 * subscription as its last event.
 */
export type CoreEventType = "node.inserted" | "node.updated" | "node.deleted" | "memory.added" | "server.shutdown";

export interface CoreEvent {
  readonly type: CoreEventType;
  /** Auth user id owning the node or scratchpad. */
  readonly owner: number;
  /** Node events. */
  readonly nodeId?: bigint;
  /** `node.inserted` and `node.updated`: the node's run, metadata, times and vector (for semantic filters). */
  readonly runId?: string;
  readonly lane?: string;
  readonly metadataJson?: string;
  readonly createdAt?: string;
  readonly updatedAt?: string;
  readonly vector?: Float32Array;
  /** `memory.added`: the scratchpad and the entry as JSON text. */
  readonly sessionId?: string;
  readonly entryJson?: string;
}

export type CoreEventListener = (event: CoreEvent) => void;

export class CoreEventBus {
  readonly #listeners = new Set<CoreEventListener>();

  /** Call only after the write commits, once per event, in commit order. */
  publish(event: CoreEvent): void {
    for (const listener of this.#listeners) listener(event);
  }

  /** Registers a listener; returns the function that removes it. */
  listen(listener: CoreEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
