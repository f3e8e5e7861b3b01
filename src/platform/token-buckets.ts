// Token buckets by key (the rate limit per API key): each key may spend `burst` tokens at once, refilled
// continuously at `perSecond`; a bounded number of keys is tracked.
import { LRUCache } from "lru-cache";

export interface BucketPolicy {
  /** Tokens added per second. */
  readonly perSecond: number;
  /** The bucket's size: how many calls a key may make at once after a quiet spell. */
  readonly burst: number;
}

/** The outcome of one `take`, with what the rate-limit headers report. */
export interface Admission {
  readonly allowed: boolean;
  /** Whole tokens left after this call. */
  readonly remaining: number;
  /** Seconds until the bucket is full again. */
  readonly fullInSeconds: number;
  /** Seconds until the next token (0 when one is there). */
  readonly nextTokenInSeconds: number;
}

interface Bucket {
  tokens: number;
  /** Clock reading (ms) of the last refill. */
  at: number;
}

/**
 * Keys tracked at once. A key dropped (the least recently seen) starts again with a full bucket, which it would
 * mostly have by then anyway: it took more than this many other keys' calls since its last one.
 */
export const MAX_TRACKED_KEYS = 50_000;

export class TokenBuckets {
  readonly policy: BucketPolicy;
  readonly #now: () => number;
  readonly #buckets: LRUCache<string, Bucket>;

  /** `now` reads a clock in milliseconds; tests pass a fake one. */
  constructor(policy: BucketPolicy, now: () => number, maxKeys = MAX_TRACKED_KEYS) {
    this.policy = policy;
    this.#now = now;
    this.#buckets = new LRUCache({ max: maxKeys });
  }

  /** Spends one of the key's tokens if it has one. */
  take(key: string): Admission {
    const { perSecond, burst } = this.policy;
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: burst, at: now };
      this.#buckets.set(key, bucket);
    } else {
      // A clock that steps back refills nothing rather than draining the bucket.
      const elapsedSeconds = Math.max(0, now - bucket.at) / 1000;
      bucket.tokens = Math.min(burst, bucket.tokens + elapsedSeconds * perSecond);
      bucket.at = now;
    }
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      fullInSeconds: (burst - bucket.tokens) / perSecond,
      nextTokenInSeconds: bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / perSecond,
    };
  }

  /** Keys currently tracked (tests: the map stays bounded). */
  get size(): number {
    return this.#buckets.size;
  }
}
