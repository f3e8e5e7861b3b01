// Server-side console sessions: the signed-in user's API key stays here; the browser holds only a random session id.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";

export interface ConsoleSession {
  /** 256 random bits, base64url: the cookie's value. */
  readonly id: string;
  readonly username: string;
  /** The key the session acts with; it never leaves the server. */
  readonly apiKey: string;
  /** 256 random bits, base64url: sent back in X-CSRF-Token by every state-changing request. */
  readonly csrfToken: string;
  readonly createdAt: number;
  lastUsedAt: number;
}

export interface SessionLimits {
  readonly idleMs: number;
  readonly maxMs: number;
  readonly maxSessions: number;
}

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function randomToken(): string {
  return randomBytes(32).toString("base64url");
}

export class ConsoleSessions {
  readonly #limits: SessionLimits;
  readonly #now: () => number;
  /** Bounded: a sign-in beyond the limit evicts the least recently used session. */
  readonly #sessions: LRUCache<string, ConsoleSession>;

  constructor(limits: SessionLimits, now: () => number) {
    this.#limits = limits;
    this.#now = now;
    this.#sessions = new LRUCache({ max: limits.maxSessions });
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Seconds the session cookie lives: the absolute lifetime, since the server ends idle sessions itself. */
  get cookieMaxAgeSeconds(): number {
    return Math.floor(this.#limits.maxMs / 1000);
  }

  create(username: string, apiKey: string): ConsoleSession {
    const now = this.#now();
    const session: ConsoleSession = { id: randomToken(), username, apiKey, csrfToken: randomToken(), createdAt: now, lastUsedAt: now };
    this.#sessions.set(session.id, session);
    return session;
  }

  /**
   * The live session of an id, marked as used now (its idle time restarts and it becomes the most recently used);
   * undefined when unknown or expired. Expired sessions are dropped when met, or evicted as the least recently used.
   */
  use(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined || !SESSION_ID.test(id)) return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    const now = this.#now();
    if (now >= this.expiresAt(session)) {
      this.#sessions.delete(id);
      return undefined;
    }
    session.lastUsedAt = now;
    return session;
  }

  /** When the session ends if not used again: the earlier of its idle and absolute expiries, in epoch ms. */
  expiresAt(session: ConsoleSession): number {
    return Math.min(session.lastUsedAt + this.#limits.idleMs, session.createdAt + this.#limits.maxMs);
  }

  destroy(id: string): void {
    this.#sessions.delete(id);
  }

  clear(): void {
    this.#sessions.clear();
  }
}

/** Constant-time comparison of the header's token with the session's. */
export function csrfMatches(session: ConsoleSession, header: string | string[] | undefined): boolean {
  if (typeof header !== "string") return false;
  const presented = Buffer.from(header, "utf8");
  const expected = Buffer.from(session.csrfToken, "utf8");
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}
