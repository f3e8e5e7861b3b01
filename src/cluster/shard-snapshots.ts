// Snapshots of clustered mode: a node's store, copied whole and consistent (LMDB's compacting copy, taken while writes
// go on), kept in a JetStream object store with the log position of every shard it holds. A new or wiped node
// starts from the latest snapshot of its shards and applies only the log's tail, so the log need not be kept from
// its beginning. The positions are read from the copy itself: each shard's applied sequence is committed in the same
// transactions as its commands' writes, so the copy holds exactly the commands up to it.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Objm, StorageType, type ObjectStore } from "@nats-io/obj";
import { Storage } from "../storage/database.js";
import { appliedSequence } from "./shard-applier.js";
import { createRetrying } from "./command-log.js";

const BUCKET = "engram-snapshots";

/** What a snapshot holds: each shard's last applied command in it. */
export interface SnapshotInfo {
  readonly name: string;
  readonly positions: Readonly<Record<string, number>>;
  readonly bytes: number;
}

export class SnapshotStore {
  readonly #connection: NatsConnection;
  readonly #store: ObjectStore;

  private constructor(connection: NatsConnection, store: ObjectStore) {
    this.#connection = connection;
    this.#store = store;
  }

  static async open(options: { servers: readonly string[]; replicas?: number; bucket?: string }): Promise<SnapshotStore> {
    const connection = await connect({ servers: [...options.servers], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    try {
      const objm = new Objm(connection);
      const store = await createRetrying(() => objm.create(options.bucket ?? BUCKET, { storage: StorageType.File, replicas: options.replicas ?? 3 }));
      return new SnapshotStore(connection, store);
    } catch (e: unknown) {
      await connection.close();
      throw e;
    }
  }

  /** Copies `storage` and keeps the copy under `name` (replacing an older one), with the positions of `shards`. */
  async publish(storage: Storage, name: string, shards: readonly number[]): Promise<SnapshotInfo> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-snapshot-"));
    try {
      await storage.copyTo(dir);
      const copy = new Storage(dir);
      const positions: Record<string, number> = {};
      try {
        for (const shard of shards) positions[String(shard)] = appliedSequence(copy, shard);
      } finally {
        await copy.close();
      }
      const file = path.join(dir, "data.mdb");
      const bytes = fs.statSync(file).size;
      const data = Readable.toWeb(fs.createReadStream(file)) as unknown as ReadableStream<Uint8Array>;
      await this.#store.put({ name, description: JSON.stringify({ positions }) }, data);
      return { name, positions, bytes };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /** The snapshot kept under `name`, or undefined. */
  async info(name: string): Promise<SnapshotInfo | undefined> {
    const info = await createRetrying(() => this.#store.info(name));
    if (info === null || info.deleted === true) return undefined;
    return { name, positions: positionsOf(info.description), bytes: info.size };
  }

  /** Every snapshot kept. */
  async list(): Promise<SnapshotInfo[]> {
    const infos = await createRetrying(() => this.#store.list());
    return infos.filter((info) => info.deleted !== true).map((info) => ({ name: info.name, positions: positionsOf(info.description), bytes: info.size }));
  }

  /**
   * Writes the snapshot kept under `name` as the store of the empty directory `dir` (an LMDB environment directory)
   * and returns what it holds; undefined when there is no such snapshot. The object store checks its digest.
   */
  async restore(name: string, dir: string): Promise<SnapshotInfo | undefined> {
    const result = await createRetrying(() => this.#store.get(name));
    if (result === null) return undefined;
    fs.mkdirSync(dir, { recursive: true });
    if (fs.readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: a snapshot is restored into an empty store only`);
    const file = path.join(dir, "data.mdb");
    const out = fs.createWriteStream(file);
    const reader = result.data.getReader();
    try {
      for (;;) {
        const { done, value } = await readWithin(reader, CHUNK_STALL_MS, name);
        if (done) break;
        if (!out.write(value)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      }
    } finally {
      await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
    }
    // Resolves to nothing once the whole object was read and its digest matched.
    const failed = await result.error;
    if (failed !== null && failed !== undefined) {
      fs.rmSync(file, { force: true });
      throw new Error(`snapshot ${name} did not read back whole`);
    }
    return { name, positions: positionsOf(result.info.description), bytes: result.info.size };
  }

  async close(): Promise<void> {
    await this.#connection.drain();
  }
}

/**
 * A chunk not read within this long ends the restore (and the caller reads again): a snapshot replaced while it is
 * read has its chunks purged under the reader, which then waits for ever.
 */
const CHUNK_STALL_MS = 15_000;

async function readWithin<T>(reader: ReadableStreamDefaultReader<T>, ms: number, name: string): Promise<{ done: boolean; value?: T }> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`snapshot ${name}: no chunk arrived within ${ms} ms (replaced while read?)`)), ms);
  });
  try {
    return await Promise.race([reader.read(), stalled]);
  } catch (e: unknown) {
    void reader.cancel().catch(() => undefined);
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

function positionsOf(description: string | undefined): Record<string, number> {
  try {
    const parsed = JSON.parse(description ?? "{}") as { positions?: Record<string, number> };
    return parsed.positions ?? {};
  } catch {
    return {};
  }
}
