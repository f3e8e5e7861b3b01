// Caps on concurrent open subscriptions: per API key and server-wide, so that one key opening thousands of streams
// can neither exhaust memory (each holds a bounded queue) nor starve other tenants of slots.
import { Code, ConnectError } from "@connectrpc/connect";

export interface SubscriptionLimits {
  /** Open subscriptions one API key may hold (SERVICE_MAX_SUBSCRIPTIONS_PER_KEY). */
  readonly perKey: number;
  /** Open subscriptions of all keys together (SERVICE_MAX_SUBSCRIPTIONS). */
  readonly total: number;
}

/** The defaults of the configuration, for callers built without one (unit tests). */
export const DEFAULT_SUBSCRIPTION_LIMITS: SubscriptionLimits = { perKey: 64, total: 4096 };

/** Frees one slot; calling it again does nothing. */
export type ReleaseSlot = () => void;

export class SubscriptionSlots {
  readonly #limits: SubscriptionLimits;
  /** What the slots are for, in messages: "core event subscriptions", "control event subscriptions". */
  readonly #what: string;
  readonly #byKey = new Map<string, number>();
  #total = 0;

  constructor(what: string, limits: SubscriptionLimits = DEFAULT_SUBSCRIPTION_LIMITS) {
    this.#what = what;
    this.#limits = limits;
  }

  /** Takes a slot for the key, or throws RESOURCE_EXHAUSTED (HTTP 429) naming the limit reached. */
  acquire(keyId: string): ReleaseSlot {
    const held = this.#byKey.get(keyId) ?? 0;
    if (held >= this.#limits.perKey) {
      throw new ConnectError(
        `this API key already holds ${held} open ${this.#what}, the limit per key (SERVICE_MAX_SUBSCRIPTIONS_PER_KEY=${this.#limits.perKey}); close one first`,
        Code.ResourceExhausted,
      );
    }
    if (this.#total >= this.#limits.total) {
      throw new ConnectError(
        `the server holds ${this.#total} open ${this.#what}, its limit (SERVICE_MAX_SUBSCRIPTIONS=${this.#limits.total}); try again later`,
        Code.ResourceExhausted,
      );
    }
    this.#byKey.set(keyId, held + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      const left = (this.#byKey.get(keyId) ?? 1) - 1;
      if (left === 0) this.#byKey.delete(keyId);
      else this.#byKey.set(keyId, left);
    };
  }

  /** Slots held by one key. */
  heldBy(keyId: string): number {
    return this.#byKey.get(keyId) ?? 0;
  }

  get total(): number {
    return this.#total;
  }
}
