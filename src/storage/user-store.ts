// Users and their API keys in LMDB. Only the hash of a key's secret is ever stored.
import type { Storage } from "./database.js";
import { nextSequence } from "./database.js";

export type Role = "admin" | "user";

export interface UserRecord {
  readonly v: 1;
  readonly userId: number;
  readonly username: string;
  readonly role: Role;
  readonly createdAt: string;
  /** Key id of the active key; undefined when the key was revoked. */
  readonly activeKeyId: string | undefined;
}

export interface KeyRecord {
  readonly v: 1;
  readonly keyId: string;
  readonly username: string;
  readonly secretHash: string;
  readonly createdAt: string;
  readonly revokedAt: string | undefined;
}

export interface NewKey {
  readonly keyId: string;
  readonly secretHash: string;
}

export class UserStore {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  get(username: string): UserRecord | undefined {
    return this.#storage.dbs.users.get(username) as UserRecord | undefined;
  }

  getKey(keyId: string): KeyRecord | undefined {
    return this.#storage.dbs.keys.get(keyId) as KeyRecord | undefined;
  }

  list(): UserRecord[] {
    const users: UserRecord[] = [];
    for (const { value } of this.#storage.dbs.users.getRange()) users.push(value as UserRecord);
    return users.sort((a, b) => a.userId - b.userId);
  }

  count(): number {
    return this.#storage.dbs.users.getCount();
  }

  /** Creates a user with its first key; resolves undefined when the username is taken. */
  async create(username: string, role: Role, key: NewKey): Promise<UserRecord | undefined> {
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      if (dbs.users.get(username) !== undefined) return undefined;
      const now = new Date().toISOString();
      const user: UserRecord = {
        v: 1,
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
      const user = dbs.users.get(username) as UserRecord | undefined;
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
      const user = dbs.users.get(username) as UserRecord | undefined;
      if (user === undefined) return undefined;
      if (user.activeKeyId === undefined) return { user, revoked: false };
      this.#revokeKey(user.activeKeyId, new Date().toISOString());
      dbs.users.put(username, { ...user, activeKeyId: undefined });
      return { user, revoked: true };
    });
  }

  #revokeKey(keyId: string | undefined, now: string): void {
    if (keyId === undefined) return;
    const record = this.#storage.dbs.keys.get(keyId) as KeyRecord | undefined;
    if (record !== undefined) this.#storage.dbs.keys.put(keyId, { ...record, revokedAt: now });
  }

  #keyRecord(username: string, key: NewKey, now: string): KeyRecord {
    return { v: 1, keyId: key.keyId, username, secretHash: key.secretHash, createdAt: now, revokedAt: undefined };
  }
}
