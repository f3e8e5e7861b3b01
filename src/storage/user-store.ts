// Users and their API keys in LMDB, decoded on every read. Only the hash of a key's secret is ever stored.
import type { Storage } from "./database.js";
import { nextSequence } from "./database.js";
import { checkVersions, decodeOptional, openRecord } from "./record-codec.js";

export const ROLES = ["admin", "user"] as const;
export type Role = (typeof ROLES)[number];

/** The record version this build writes and reads, of users and keys alike. */
export const USER_RECORD_VERSION = 1;

export interface UserRecord {
  readonly v: typeof USER_RECORD_VERSION;
  readonly userId: number;
  readonly username: string;
  readonly role: Role;
  readonly createdAt: string;
  /** Key id of the active key; undefined when the key was revoked. */
  readonly activeKeyId: string | undefined;
}

export interface KeyRecord {
  readonly v: typeof USER_RECORD_VERSION;
  readonly keyId: string;
  readonly username: string;
  readonly secretHash: string;
  readonly createdAt: string;
  readonly revokedAt: string | undefined;
}

export function decodeUser(username: string, value: unknown): UserRecord {
  const r = openRecord("users", username, value, USER_RECORD_VERSION);
  return {
    v: USER_RECORD_VERSION,
    userId: r.integer("userId"),
    username: r.string("username"),
    role: r.oneOf("role", ROLES),
    createdAt: r.string("createdAt"),
    activeKeyId: r.optionalString("activeKeyId"),
  };
}

export function decodeKey(keyId: string, value: unknown): KeyRecord {
  const r = openRecord("keys", keyId, value, USER_RECORD_VERSION);
  return {
    v: USER_RECORD_VERSION,
    keyId: r.string("keyId"),
    username: r.string("username"),
    secretHash: r.string("secretHash"),
    createdAt: r.string("createdAt"),
    revokedAt: r.optionalString("revokedAt"),
  };
}

export interface NewKey {
  readonly keyId: string;
  readonly secretHash: string;
}

export class UserStore {
  readonly #storage: Storage;

  /** Opens the store; throws RecordVersionError when a user or key was written by another schema version. */
  constructor(storage: Storage) {
    this.#storage = storage;
    checkVersions("users", storage.dbs.users, USER_RECORD_VERSION);
    checkVersions("keys", storage.dbs.keys, USER_RECORD_VERSION);
  }

  get(username: string): UserRecord | undefined {
    return decodeOptional(this.#storage.dbs.users.get(username), (value) => decodeUser(username, value));
  }

  getKey(keyId: string): KeyRecord | undefined {
    return decodeOptional(this.#storage.dbs.keys.get(keyId), (value) => decodeKey(keyId, value));
  }

  list(): UserRecord[] {
    const users: UserRecord[] = [];
    for (const { key, value } of this.#storage.dbs.users.getRange()) users.push(decodeUser(key, value));
    return users.sort((a, b) => a.userId - b.userId);
  }

  count(): number {
    return this.#storage.dbs.users.getCount();
  }

  /** Creates a user with its first key; resolves undefined when the username is taken. */
  async create(username: string, role: Role, key: NewKey): Promise<UserRecord | undefined> {
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      if (this.get(username) !== undefined) return undefined;
      const now = new Date().toISOString();
      const user: UserRecord = {
        v: USER_RECORD_VERSION,
        userId: nextSequence(dbs.meta, "user"),
        username,
        role,
        createdAt: now,
        activeKeyId: key.keyId,
      };
      dbs.users.put(username, user);
      dbs.keys.put(key.keyId, this.#keyRecord(username, key, now));
      return user;
    });
  }

  /** Replaces the active key (revoking the old one); undefined when the user does not exist. */
  async rotate(username: string, key: NewKey): Promise<UserRecord | undefined> {
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const user = this.get(username);
      if (user === undefined) return undefined;
      const now = new Date().toISOString();
      this.#revokeKey(user.activeKeyId, now);
      const updated: UserRecord = { ...user, activeKeyId: key.keyId };
      dbs.users.put(username, updated);
      dbs.keys.put(key.keyId, this.#keyRecord(username, key, now));
      return updated;
    });
  }

  /** Revokes the active key. Resolves the user before the change and whether a key was active, or undefined. */
  async revoke(username: string): Promise<{ user: UserRecord; revoked: boolean } | undefined> {
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const user = this.get(username);
      if (user === undefined) return undefined;
      if (user.activeKeyId === undefined) return { user, revoked: false };
      this.#revokeKey(user.activeKeyId, new Date().toISOString());
      dbs.users.put(username, { ...user, activeKeyId: undefined });
      return { user, revoked: true };
    });
  }

  #revokeKey(keyId: string | undefined, now: string): void {
    if (keyId === undefined) return;
    const record = this.getKey(keyId);
    if (record !== undefined) this.#storage.dbs.keys.put(keyId, { ...record, revokedAt: now });
  }

  #keyRecord(username: string, key: NewKey, now: string): KeyRecord {
    return { v: USER_RECORD_VERSION, keyId: key.keyId, username, secretHash: key.secretHash, createdAt: now, revokedAt: undefined };
  }
}
