// One Engram node of a cluster (SERVICE_CLUSTER_NATS_URL): the replicas of the shards it serves, every transaction of
// its store replicated through the log, and the shard map by which nodes find each other.
//
// Shards: tenant data lives on shard 1 + (owner mod SERVICE_CLUSTER_SHARD_COUNT); users, API keys and what an admin
// writes live on the global shard 0, which every node serves (so any node authenticates any caller). A transaction
// belongs to the shard of the write scope it runs in (storage/write-scope.ts): the transport opens one per call, for
// the caller; background work opens one for the owner it works for.
import fs from "node:fs";
import path from "node:path";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { setSequenceStrides, type ReplayedWrite, type SequenceStride, type Storage } from "../storage/database.js";
import { currentWriteScope, type WriteScope } from "../storage/write-scope.js";
import type { ClusterConfig } from "../platform/config.js";
import type { Logger } from "../platform/logger.js";
import { CommandLog, LogTruncated, createRetrying } from "./command-log.js";
import { LogTrimmer, progressKey, snapshotName, type NodeProgress } from "./log-trimming.js";
import { SnapshotStore, type SnapshotInfo } from "./shard-snapshots.js";
import { EventRelay } from "./event-relay.js";
import type { EventBus } from "../events/event-bus.js";
import { ShardReplica } from "./replicated-transaction.js";
import { appliedSequence, clusterOfStore, forgetAppliedPositions, markMemberOf } from "./shard-applier.js";

export const GLOBAL_SHARD = 0;

/** The KV bucket of the shard map and of the nodes' progress. */
const shardMapBucket = (config: ClusterConfig): string => `${config.name.toLowerCase()}-shard-map`;

/** A consistency token: the last log position a call wrote at, per shard (`shard:sequence`, comma-separated). */
export type ConsistencyToken = ReadonlyMap<number, number>;

/** What the shard map says of a node: where to reach it and which tenant shards it serves. */
interface NodeAnnouncement {
  readonly url: string;
  readonly shards: readonly number[];
}

/** A transaction of a shard this node does not hold: the call belongs on a node that does. */
export class ShardNotServed extends Error {
  constructor(readonly shard: number) {
    super(`shard ${shard} is not served by this node`);
  }
}

/** A consistency token that does not parse. */
export class MalformedToken extends Error {}

/** This node had not applied a token's position within the read wait. */
export class ReplicaBehind extends Error {}

export class ClusterNode {
  readonly #config: ClusterConfig;
  readonly #log: CommandLog;
  readonly #mapConnection: NatsConnection;
  readonly #shardMap: KV;
  readonly #replicas: ReadonlyMap<number, ShardReplica>;
  /** The shard map as last read: the other nodes' ids → announcements (a handful of nodes). */
  readonly #nodes = new Map<string, NodeAnnouncement>();
  /**
   * When each other node's announcement was last seen to change, and its revision then (this process's clock: no skew
   * between machines).
   */
  readonly #heardAt = new Map<string, { readonly at: number; readonly revision: number }>();
  /** Nodes not heard within the node timeout: not forwarded to until they announce again. */
  readonly #gone = new Set<string>();
  readonly #peerLeftListeners: (() => void)[] = [];
  readonly #stops: (() => void)[] = [];
  readonly #logger: Logger;

  readonly #snapshots: SnapshotStore;
  readonly #trimmer: LogTrimmer;

  private constructor(
    config: ClusterConfig,
    log: CommandLog,
    mapConnection: NatsConnection,
    shardMap: KV,
    replicas: ReadonlyMap<number, ShardReplica>,
    logger: Logger,
    snapshots: SnapshotStore,
    trimmer: LogTrimmer,
  ) {
    this.#snapshots = snapshots;
    this.#trimmer = trimmer;
    this.#config = config;
    this.#log = log;
    this.#mapConnection = mapConnection;
    this.#shardMap = shardMap;
    this.#replicas = replicas;
    this.#logger = logger;
  }

  /**
   * Joins the cluster: opens the log, catches this store up on every shard it serves, routes the store's
   * transactions through the log, and announces itself in the shard map. `onReplayed` hears the writes other nodes
   * made, once the caller starts following (`follow`).
   */
  static async join(config: ClusterConfig, storage: Storage, logger: Logger, onReplayed: (writes: readonly ReplayedWrite[]) => void): Promise<ClusterNode> {
    const log = await CommandLog.open({ servers: config.natsUrls, replicas: config.replicas, stream: `${config.name}_LOG` });
    let mapConnection: NatsConnection | undefined;
    let snapshots: SnapshotStore | undefined;
    try {
      mapConnection = await connect({ servers: [...config.natsUrls], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
      warnOfOldServer(mapConnection.info?.version, logger);
      const kvm = new Kvm(mapConnection);
      const shardMap = await createRetrying(() => kvm.create(shardMapBucket(config), { replicas: config.replicas, history: 1 }));
      snapshots = await SnapshotStore.open({ servers: config.natsUrls, replicas: config.replicas, bucket: `${config.name.toLowerCase()}-snapshots` });
      const replicas = new Map<number, ShardReplica>();
      for (const shard of [GLOBAL_SHARD, ...config.servedShards]) replicas.set(shard, new ShardReplica(log, storage, shard, onReplayed));
      const trimmer = new LogTrimmer({ nodeId: config.nodeId, shards: config.servedShards }, storage, log, shardMap, snapshots, logger);
      const node = new ClusterNode(config, log, mapConnection, shardMap, replicas, logger, snapshots, trimmer);
      await admitStore(config, storage, log, shardMap, snapshots, logger);
      for (const [shard, replica] of replicas) {
        try {
          logger.info({ shard, applied: await replica.apply() }, "cluster shard caught up");
        } catch (e: unknown) {
          if (e instanceof LogTruncated) throw new Error(`${e.message}: stop this node, empty its data directory, and start it again to begin from the snapshot of shards ${config.servedShards.join(",")}`);
          throw e;
        }
      }
      await storage.localTransaction(() => markMemberOf(storage, config.name));
      // Recorded before anything else: from now on the log is never trimmed past where this node stands.
      await trimmer.recordProgress();
      storage.replicateThrough((fn) => node.#transaction(fn));
      setSequenceStrides(() => node.#strideOf(node.shardOf(currentWriteScope())));
      await node.#announce();
      await node.#watchShardMap();
      return node;
    } catch (e: unknown) {
      await snapshots?.close();
      await mapConnection?.close();
      await log.close();
      throw e;
    }
  }

  /**
   * A node whose store is empty (new, or wiped) starts from the latest snapshot of its set of shards, when there is
   * one: it then applies only the log's tail. Call before the store is opened.
   */
  static async bootstrap(config: ClusterConfig, lmdbDir: string, logger: Logger): Promise<void> {
    if (fs.existsSync(path.join(lmdbDir, "data.mdb"))) return;
    // First a progress record at nothing applied, unless the node has one: the log of its shards is not trimmed from
    // now until it has joined (and recorded where it stands), so the snapshot it restores stays enough.
    const connection = await connect({ servers: [...config.natsUrls], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    try {
      const kvm = new Kvm(connection);
      const bucket = await createRetrying(() => kvm.create(shardMapBucket(config), { replicas: config.replicas, history: 1 }));
      const key = progressKey(config.nodeId);
      if ((await createRetrying(() => bucket.get(key))) === null) {
        await createRetrying(() => bucket.put(key, JSON.stringify({ shards: config.servedShards, applied: {} } satisfies NodeProgress)));
      }
      await untilSeeded(bucket, config.nodeId, logger);
    } finally {
      await connection.close();
    }
    const snapshots = await SnapshotStore.open({ servers: config.natsUrls, replicas: config.replicas, bucket: `${config.name.toLowerCase()}-snapshots` });
    try {
      // The snapshot of this node's own set; else the smallest that holds all of its shards (the first node of a new
      // set): its other shards' records stay as they were, unused, since calls for them are forwarded.
      const needed = [GLOBAL_SHARD, ...config.servedShards].map(String);
      const name =
        (await snapshots.info(snapshotName(config.servedShards)))?.name ??
        (await snapshots.list()).filter((s) => needed.every((shard) => shard in s.positions)).sort((a, b) => a.bytes - b.bytes)[0]?.name;
      // A snapshot replaced by a newer one while it is read fails its digest: read again (the newer one).
      const restore = async (snapshot: string): Promise<SnapshotInfo | undefined> => {
        fs.rmSync(lmdbDir, { recursive: true, force: true });
        return snapshots.restore(snapshot, lmdbDir);
      };
      const restored = name === undefined ? undefined : await createRetrying(() => restore(name));
      if (restored !== undefined) logger.info({ snapshot: restored.name, bytes: restored.bytes, positions: restored.positions }, "store restored from the cluster snapshot");
    } finally {
      await snapshots.close();
    }
  }

  get nodeId(): string {
    return this.#config.nodeId;
  }

  /** Applies every served shard's commands as they are appended (call once the indexes hear replayed writes). */
  follow(): void {
    for (const replica of this.#replicas.values()) this.#stops.push(replica.follow());
    const every = this.#config.snapshotIntervalMs;
    if (every === 0) return;
    const timer = setInterval(() => {
      this.#trimmer.round().catch((e: unknown) => this.#logger.warn({ err: e }, "cluster snapshot and log trim failed; the next round tries again"));
    }, every);
    timer.unref();
    this.#stops.push(() => clearInterval(timer));
  }

  /** Carries control events between this node's bus and the other nodes' (event-relay.ts). */
  async relayEvents(bus: EventBus): Promise<void> {
    const relay = await EventRelay.open(this.#mapConnection, `${this.#config.name}_EVENTS`, this.#config.nodeId, this.#config.replicas, this.#logger);
    bus.relayTo((event) => relay.send(event), this.#config.nodeId);
    await relay.listen((event) => bus.deliver(event));
    this.#stops.push(() => relay.close());
  }

  /** The shard a scope's writes go to: its owner's, or the global shard for no single owner. */
  shardOf(scope: Pick<WriteScope, "owner"> | undefined): number {
    const owner = scope?.owner;
    return owner === undefined ? GLOBAL_SHARD : 1 + (owner % this.#config.shardCount);
  }

  serves(shard: number): boolean {
    return this.#replicas.has(shard);
  }

  #strideOf(shard: number): SequenceStride {
    return { shard, shards: this.#config.shardCount + 1 };
  }

  async #transaction<T>(fn: () => T): Promise<T> {
    const scope = currentWriteScope();
    const shard = this.shardOf(scope);
    const replica = this.#replicas.get(shard);
    if (replica === undefined) throw new ShardNotServed(shard);
    const { result, sequence } = await replica.transaction(fn, this.#strideOf(shard));
    if (sequence > 0 && scope !== undefined) scope.written.set(shard, Math.max(sequence, scope.written.get(shard) ?? 0));
    return result;
  }

  /** The position of `shard` this node's reads reflect, 0 when it does not serve it. */
  readsReflect(shard: number): number {
    return this.#replicas.get(shard)?.heard ?? 0;
  }

  /**
   * Read-your-writes: resolves once this node has applied every position of `token` it serves, or throws
   * ReplicaBehind after the configured wait.
   */
  async waitFor(token: ConsistencyToken): Promise<void> {
    const waits = [...token].filter(([shard]) => this.serves(shard)).map(([shard, sequence]) => (this.#replicas.get(shard) as ShardReplica).waitFor(sequence, this.#config.readWaitMs));
    const applied = await Promise.all(waits);
    if (applied.includes(false)) throw new ReplicaBehind(`node ${this.#config.nodeId} had not applied the consistency token's writes within ${this.#config.readWaitMs} ms; retry`);
  }

  /** Whether the owner's data lives on a shard this node serves (its background work is this node's to do). */
  servesOwner(owner: number): boolean {
    return this.serves(this.shardOf({ owner }));
  }

  /**
   * Whether this node announces what is derived, not written, for the owner (an agent going idle): the first live node,
   * by id, of the owner's shard does, so each change is announced once; the next takes over when it is lost.
   */
  announcesFor(owner: number): boolean {
    const shard = this.shardOf({ owner });
    const live = [...this.#nodes].filter(([id, node]) => !this.#gone.has(id) && node.shards.includes(shard)).map(([id]) => id);
    return this.serves(shard) && live.every((id) => id > this.#config.nodeId);
  }

  /**
   * Calls `listener` when another node that served one of this node's shards leaves the shard map or is not heard
   * within the node timeout: its unfinished work (ingest jobs, run purges, replicated to this store) is now this
   * node's to take up. Running it twice is harmless (a job another node finished stores nothing).
   */
  whenPeerLeaves(listener: () => void): void {
    this.#peerLeftListeners.push(listener);
  }

  /** The other live nodes that serve `shard`, by URL from the shard map, in random order (forwarded calls spread out). */
  nodesServing(shard: number): string[] {
    const candidates = [...this.#nodes].filter(([id, node]) => !this.#gone.has(id) && node.shards.includes(shard)).map(([, node]) => node.url);
    for (let i = candidates.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [candidates[i], candidates[j]] = [candidates[j] as string, candidates[i] as string];
    }
    return candidates;
  }

  async #announce(): Promise<void> {
    const announcement: NodeAnnouncement = { url: this.#config.advertiseUrl, shards: this.#config.servedShards };
    await createRetrying(() => this.#shardMap.put(`node.${this.#config.nodeId}`, JSON.stringify(announcement)));
  }

  async #watchShardMap(): Promise<void> {
    // The watch finds nodes as they join and leave; each beat also reads every known node's entry directly, since a
    // watch can stall for a long while when its NATS server is lost, and a stalled watch must not make nodes look gone.
    const watcher = await this.#shardMap.watch({ key: "node.>" });
    this.#stops.push(() => watcher.stop());
    void (async () => {
      for await (const change of watcher) this.#heard(change.key.slice("node.".length), change);
    })().catch((e: unknown) => this.#logger.warn({ err: e }, "shard map watch ended; beats still read the known nodes"));
    // Each node refreshes its announcement four times per timeout, and looks for the nodes it has not heard from.
    const every = Math.max(250, Math.floor(this.#config.nodeTimeoutMs / 4));
    let beating = false;
    const timer = setInterval(() => {
      if (beating) return;
      beating = true;
      this.#beat()
        .catch((e: unknown) => this.#logger.warn({ err: e }, "cluster announcement not refreshed; the next beat tries again"))
        .finally(() => (beating = false));
    }, every);
    timer.unref();
    this.#stops.push(() => clearInterval(timer));
  }

  async #beat(): Promise<void> {
    await this.#announce();
    for (const id of [...this.#nodes.keys()]) this.#heard(id, await this.#shardMap.get(`node.${id}`));
    const now = performance.now();
    for (const [id, { at }] of this.#heardAt) {
      if (now - at > this.#config.nodeTimeoutMs && !this.#gone.has(id)) {
        this.#gone.add(id);
        this.#peerLeft(id, `not heard for ${this.#config.nodeTimeoutMs} ms`);
      }
    }
  }

  /** A node's shard map entry as read (watched, or got): a new revision is a sign of life; none, of departure. */
  #heard(id: string, entry: KvEntry | null): void {
    if (id === this.#config.nodeId) return;
    if (entry === null || entry.operation !== "PUT") {
      if (!this.#nodes.has(id)) return;
      this.#peerLeft(id, "left the shard map");
      this.#nodes.delete(id);
      this.#heardAt.delete(id);
      return;
    }
    if (this.#heardAt.get(id)?.revision === entry.revision) return;
    try {
      this.#nodes.set(id, parseAnnouncement(entry.string()));
      this.#heardAt.set(id, { at: performance.now(), revision: entry.revision });
      if (this.#gone.delete(id)) this.#logger.info({ node: id }, "cluster node heard again");
    } catch (e: unknown) {
      this.#logger.warn({ node: id, err: e }, "shard map entry ignored");
    }
  }

  /** A node left: when it served one of this node's shards, the listeners take up its unfinished work. */
  #peerLeft(id: string, why: string): void {
    const shards = this.#nodes.get(id)?.shards.filter((shard) => this.serves(shard)) ?? [];
    this.#logger.warn({ node: id, shared_shards: shards }, `cluster node ${why}`);
    if (shards.length === 0) return;
    for (const listener of this.#peerLeftListeners) {
      try {
        listener();
      } catch (e: unknown) {
        this.#logger.error({ err: e }, "taking up a departed node's work failed");
      }
    }
  }

  async close(): Promise<void> {
    for (const stop of this.#stops.splice(0)) stop();
    // Leaving the map at once: calls are no longer forwarded here, and the others take up what this node left queued.
    await this.#shardMap.delete(`node.${this.#config.nodeId}`).catch(() => undefined);
    // The last progress lets the others trim up to where this node stopped; a round under way finishes first.
    await this.#trimmer.idle();
    await this.#trimmer.recordProgress().catch(() => undefined);
    await this.#snapshots.close();
    await this.#mapConnection.close();
    await this.#log.close();
  }
}

/**
 * nats-server before 2.9.21 replays a purge filtered to one subject, on a server restarted after it, as a purge of
 * every subject (nats-io/nats-server#4196). The log never purges that way (a stream per shard), but the snapshots'
 * object store does when a snapshot is replaced: a restarted server may then lose a snapshot, which a joining node
 * detects by its digest and cannot start from until the next snapshot is taken.
 */
function warnOfOldServer(version: string | undefined, logger: Logger): void {
  const [major = 0, minor = 0, patch = 0] = (version ?? "").split(".").map((part) => Number.parseInt(part, 10) || 0);
  if (major === 2 && (minor < 9 || (minor === 9 && patch < 21))) {
    logger.warn({ nats_server: version }, "nats-server before 2.9.21 can lose snapshots on a restarted server (nats-io/nats-server#4196); upgrade when you can");
  }
}

/** The shard map's key naming the node whose store started the cluster, while and after it does (SeedClaim). */
const SEED_KEY = "seed";

interface SeedClaim {
  readonly node: string;
  readonly state: "seeding" | "seeded";
}

function parseSeedClaim(text: string): SeedClaim | undefined {
  try {
    const value = JSON.parse(text) as Partial<SeedClaim>;
    return typeof value.node === "string" && (value.state === "seeding" || value.state === "seeded") ? { node: value.node, state: value.state } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether this store may join the cluster's log. A store of this cluster must not be ahead of the log. A store written
 * elsewhere — a standalone store, a backup restored into a new data directory, another cluster's node — may only
 * start a new cluster: when the log was never written, it becomes the cluster's starting state (`seedCluster`);
 * otherwise it is refused, since its records would never agree with the log's.
 */
async function admitStore(config: ClusterConfig, storage: Storage, log: CommandLog, shardMap: KV, snapshots: SnapshotStore, logger: Logger): Promise<void> {
  const held = [GLOBAL_SHARD, ...config.servedShards];
  const foreign = clusterOfStore(storage) !== config.name && (held.some((shard) => appliedSequence(storage, shard) > 0) || storage.holdsRecords());
  if (foreign) {
    if (await log.everWritten()) {
      throw new Error(
        `the store holds records that are not from cluster ${config.name}'s log (a standalone store, a restored backup, another cluster's node): it can start a new cluster, whose log is empty, but not join this one; start this node with an empty data directory`,
      );
    }
    await seedCluster(config, storage, shardMap, snapshots, logger);
    return;
  }
  for (const shard of held) {
    const applied = appliedSequence(storage, shard);
    if (applied > (await log.lastSequence(shard))) {
      throw new Error(`the store has applied shard ${shard} up to ${applied}, past the end of the cluster's log: it comes from another log; start this node with an empty data directory`);
    }
  }
}

/**
 * Makes this node's store the starting state of a cluster whose log is empty: claims the start (one node only, and
 * only before any other node joined), begins the log's positions at nothing applied, and publishes the store as its
 * shards' snapshot, from which every node joining later starts. A node that bootstraps meanwhile waits for the
 * snapshot (`untilSeeded`). Idempotent for the node that claimed it (a crash mid-way is resumed at restart).
 */
async function seedCluster(config: ClusterConfig, storage: Storage, shardMap: KV, snapshots: SnapshotStore, logger: Logger): Promise<void> {
  const claim = (state: SeedClaim["state"]): string => JSON.stringify({ node: config.nodeId, state } satisfies SeedClaim);
  const existing = await createRetrying(() => shardMap.get(SEED_KEY));
  const claimedBy = existing === null || existing.operation !== "PUT" ? undefined : parseSeedClaim(existing.string());
  if (claimedBy !== undefined && claimedBy.node !== config.nodeId) {
    throw new Error(`cluster ${config.name} was started from node ${claimedBy.node}'s store; start this node with an empty data directory to join it`);
  }
  if (claimedBy === undefined) {
    try {
      await shardMap.create(SEED_KEY, claim("seeding"));
    } catch {
      throw new Error(`another node is starting cluster ${config.name} from its store; start this node with an empty data directory to join it`);
    }
    // A node that recorded its progress first started from the empty log: this store can no longer be the start.
    const joined: string[] = [];
    for await (const key of await shardMap.keys("progress.>")) if (key !== progressKey(config.nodeId)) joined.push(key.slice("progress.".length));
    if (joined.length > 0) {
      await shardMap.delete(SEED_KEY);
      throw new Error(`nodes ${joined.join(", ")} already joined cluster ${config.name} from its empty log, so this store cannot start it; start this node with an empty data directory`);
    }
  }
  await storage.localTransaction(() => {
    forgetAppliedPositions(storage);
    markMemberOf(storage, config.name);
  });
  const taken = await snapshots.publish(storage, snapshotName(config.servedShards), [GLOBAL_SHARD, ...config.servedShards]);
  await createRetrying(() => shardMap.put(SEED_KEY, claim("seeded")));
  logger.info({ snapshot: taken.name, bytes: taken.bytes }, `cluster ${config.name} started from this node's store`);
}

/** Waits while another node is making its store the cluster's starting state, so that this node starts from it. */
async function untilSeeded(shardMap: KV, nodeId: string, logger: Logger): Promise<void> {
  for (let waited = 0; ; waited += 250) {
    const entry = await createRetrying(() => shardMap.get(SEED_KEY));
    const claim = entry === null || entry.operation !== "PUT" ? undefined : parseSeedClaim(entry.string());
    if (claim === undefined || claim.state === "seeded" || claim.node === nodeId) return;
    if (waited === 0) logger.info({ node: claim.node }, "waiting for the node starting the cluster from its store");
    if (waited > 600_000) throw new Error(`node ${claim.node} has been starting the cluster from its store for 10 minutes; is it still running?`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function parseAnnouncement(text: string): NodeAnnouncement {
  const value = JSON.parse(text) as Partial<NodeAnnouncement>;
  if (typeof value.url !== "string" || !Array.isArray(value.shards) || !value.shards.every((s) => Number.isInteger(s))) throw new Error("not a node announcement");
  return { url: value.url, shards: value.shards };
}

/** The token as a header carries it. */
export function formatToken(token: ConsistencyToken): string {
  return [...token].map(([shard, sequence]) => `${shard}:${sequence}`).join(",");
}

/** At most this many shards in one token: far more than one call writes. */
const MAX_TOKEN_SHARDS = 64;

export function parseToken(text: string): ConsistencyToken {
  const token = new Map<number, number>();
  for (const part of text.split(",")) {
    const match = /^\s*(\d{1,6}):(\d{1,15})\s*$/.exec(part);
    if (match === null || token.size >= MAX_TOKEN_SHARDS) throw new MalformedToken(`consistency token "${text.slice(0, 80)}" is not shard:sequence[,shard:sequence…]`);
    token.set(Number(match[1]), Math.max(Number(match[2]), token.get(Number(match[1])) ?? 0));
  }
  return token;
}
