// Clustered mode end to end: three NATS JetStream servers and three Engram nodes, each a child process on loopback.
// A mixed write load (memories, ingest jobs, core nodes, lessons, handoffs, projects, access grants) is spread over
// every node while one NATS server and one Engram node are killed (SIGKILL) and restarted. Afterwards every
// acknowledged write is on every node exactly once, every node's store is identical record for record, every
// consistency token gave read-your-writes on another node, a run deletion reached every node, and a fourth node that
// joins once the log was trimmed behind a snapshot starts from it and catches up to the same store.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { collectStream, grpcStream } from "./harness/callers.js";
import { TOKEN_HEADER, callNode, clusterNodeEnv, listenOn, mergeTokens, succeedOn, type NodeAnswer } from "./harness/cluster-calls.js";
import { NatsCluster } from "./harness/nats-cluster.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { Storage } from "../src/storage/database.js";
import { decodeEntry } from "../src/storage/entry-record.js";
import { decodeNode } from "../src/core/node-record.js";
import { decodeHandoff } from "../src/coordination/handoff-record.js";
import { decodeProject, projectIdOf } from "../src/resources/resource-records.js";
import { CommandLog } from "../src/cluster/command-log.js";
import { SnapshotStore } from "../src/cluster/shard-snapshots.js";

const adminKey = mintApiKey("local").key;
const SHARDS = 3;

let nats: NatsCluster;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "engram-cluster-nodes-"));
const nodes: (ChildServer | undefined)[] = [];

function nodeEnv(i: number, shards?: string): Record<string, string> {
  return {
    ...clusterNodeEnv({ root, index: i, natsUrls: nats.urls, adminKey, shards: SHARDS }),
    SERVICE_EMBEDDER: "hashed",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CLUSTER_SNAPSHOT_INTERVAL_MS: "1000",
    ...(shards === undefined ? {} : { SERVICE_CLUSTER_SHARDS: shards }),
  };
}

async function startNode(i: number, shards?: string): Promise<ChildServer> {
  const child = await startChild(nodeEnv(i, shards));
  nodes[i] = child;
  return child;
}


function evidenceIds(answer: NodeAnswer): string[] {
  return ((answer.body["evidence"] as { id: string }[] | undefined) ?? []).map((e) => e.id);
}

/** Every database of a stopped node's store, digested (the cluster's own positions included: they must agree too). */
async function digestOf(i: number): Promise<Record<string, string>> {
  const storage = new Storage(path.join(root, `node${i}`, "lmdb"));
  try {
    return storage.fingerprint();
  } finally {
    await storage.close();
  }
}

/** A stopped node's applied position on every shard, as a consistency token. */
async function positionsOf(i: number): Promise<string> {
  const storage = new Storage(path.join(root, `node${i}`, "lmdb"));
  try {
    const parts: string[] = [];
    for (const { key, value } of storage.dbs.meta.getRange({ start: "cluster:applied:", end: "cluster:applied:~" })) parts.push(`${key.slice("cluster:applied:".length)}:${String(value)}`);
    return parts.join(",");
  } finally {
    await storage.close();
  }
}

/** Waits (bounded) until a node has published the snapshot of every shard and the log was trimmed behind it. */
async function untilTrimmed(): Promise<void> {
  const log = await CommandLog.open({ servers: nats.urls });
  const snapshots = await SnapshotStore.open({ servers: nats.urls });
  try {
    for (let attempt = 0; ; attempt++) {
      if ((await snapshots.info("shards-1-2-3")) !== undefined && (await log.truncatedUpTo(0)) > 0) return;
      if (attempt > 300) throw new Error("no snapshot was published, or the log was not trimmed behind it");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await snapshots.close();
    await log.close();
  }
}

beforeAll(async () => {
  ensureBuilt();
  nats = await NatsCluster.start(3);
  await Promise.all([0, 1, 2].map((i) => startNode(i)));
}, 120_000);

afterAll(async () => {
  for (const node of nodes) await node?.kill("SIGKILL");
  await nats?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

it("delivers a control event of a write on one node to a subscriber on another, and to that owner only", async () => {
  const [node0, node1] = nodes as [ChildServer, ChildServer];
  const keys: string[] = [];
  let token = "";
  for (const name of ["gamma", "delta"]) {
    const created = await succeedOn(node0, "engram.v2.AuthService/CreateUser", { username: name }, adminKey);
    keys.push(String(created.body["api_key"]));
    token = mergeTokens(token, created.token);
  }
  // Node 1 knows both keys once it has applied their creation.
  await succeedOn(node1, "engram.v2.MemoryService/Query", { run_id: "e", query: "nothing" }, keys[0] as string, token);
  const stream = grpcStream(Number(new URL(node1.baseUrl).port), "engram.v2.EventsService/Subscribe", { run_id: "e1", event_types: ["entry.*"] }, keys[0] as string);
  const { received, next } = collectStream(stream);
  await next(1);
  expect(received[0]).toMatchObject({ type: "subscribed", run_id: "e1" });
  // Another owner's write to a run of the same name, then the subscriber's own: only the latter reaches it.
  await succeedOn(node0, "engram.v2.MemoryService/Remember", { session_id: "e1", content: "another owner's fact" }, keys[1] as string);
  const own = await succeedOn(node0, "engram.v2.MemoryService/Remember", { session_id: "e1", content: "the subscriber's own fact" }, keys[0] as string);
  await next(2);
  stream.cancel();
  expect(received[1]).toMatchObject({ type: "entry.created", run_id: "e1" });
  expect(JSON.parse(String(received[1]?.["payload"]))).toMatchObject({ entry_id: own.body["entry_id"] });
  expect(received).toHaveLength(2);
}, 60_000);

it("forwards a call for a shard a node does not serve to one that does, over Connect and REST", async () => {
  const node0 = nodes[0] as ChildServer;
  // A node holding tenant shard 1 only (and the global shard, which every node holds).
  const partial = await startNode(4, "1");
  const byShard = new Map<number, { key: string; token: string }>();
  for (let i = 0; byShard.size < 2 && i < 12; i++) {
    const created = await succeedOn(node0, "engram.v2.AuthService/CreateUser", { username: `fwd${i}` }, adminKey);
    const shard = 1 + (Number(created.body["user_id"]) % SHARDS);
    if (shard === 1 ? !byShard.has(1) : ![...byShard.keys()].some((s) => s !== 1)) byShard.set(shard, { key: String(created.body["api_key"]), token: created.token as string });
  }
  expect(byShard.size).toBe(2);
  for (const [shard, { key, token }] of byShard) {
    const marker = `fwd${shard}q`;
    const wrote = await succeedOn(partial, "engram.v2.MemoryService/Remember", { session_id: "f", content: `A fact with the marker ${marker}.` }, key, token);
    expect(wrote.token, `shard ${shard}`).toMatch(new RegExp(`^${shard}:\\d+$`));
    const read = await succeedOn(partial, "engram.v2.MemoryService/Query", { run_id: "f", query: marker, mode: "direct_bypass" }, key, wrote.token as string);
    expect(evidenceIds(read)).toContain(String(wrote.body["entry_id"]));
    // The HTTP/JSON gateway's calls go the same way.
    const rest = await fetch(`${partial.baseUrl}/v2/control/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", [TOKEN_HEADER]: wrote.token as string },
      body: JSON.stringify({ run_id: "f", query: marker, mode: "direct_bypass" }),
    });
    expect(rest.status).toBe(200);
    expect(((await rest.json()) as { evidence: { id: string }[] }).evidence.map((e) => e.id)).toContain(String(wrote.body["entry_id"]));
  }
  // A server stream of the other shard is forwarded too: over gRPC, a subscriber on the partial node hears the events
  // of a write made on node 0.
  const [otherShard, other] = [...byShard].find(([shard]) => shard !== 1) as [number, { key: string; token: string }];
  const events = listenOn(partial, "engram.v2.EventsService/Subscribe", { run_id: "streamed" }, other.key);
  try {
    await events.until((e) => e["type"] === "subscribed").catch((e: unknown) => {
      throw new Error(`${String(e)}\n${partial.stdout().slice(-3000)}\n${partial.stderr().slice(-2000)}`);
    });
    const wrote = await succeedOn(node0, "engram.v2.MemoryService/Remember", { session_id: "streamed", content: `Streamed from shard ${otherShard}.` }, other.key);
    const heard = await events.until((e) => e["type"] === "entry.created");
    expect(JSON.parse(String(heard["payload"]))).toMatchObject({ entry_id: wrote.body["entry_id"] });
  } finally {
    events.close();
  }
  // A malformed token is refused, naming the header.
  const bad = await callNode(partial, "engram.v2.MemoryService/Query", { run_id: "f", query: "x" }, (byShard.get(1) as { key: string }).key, "not-a-token");
  expect(bad.status).toBe(400);
  expect(String(bad.body["message"])).toContain(TOKEN_HEADER);
}, 90_000);

/** The kinds of write the load mixes, in turn; seven, prime to the number of tenants, so that each writes every kind. */
const KINDS = ["remember", "ingest", "core-node", "lesson", "handoff", "project", "grant"] as const;
type Kind = (typeof KINDS)[number];

/** One acknowledged write: its kind, its owner, the marker its stored record carries and the id it was acknowledged with. */
interface Written {
  readonly kind: Kind;
  readonly tenant: number;
  readonly marker: string;
  readonly id: string;
}

/** One write of the load: made on `writer`, read back on `reader` (another node) with the write's token. */
interface LoadStep {
  readonly writer: ChildServer;
  readonly reader: ChildServer;
  readonly key: string;
  readonly tenant: number;
  readonly n: number;
  readonly marker: string;
}

/** A write's consistency token, which every write answers with. */
function tokenOf(answer: NodeAnswer): string {
  expect(answer.token, "a write answers with its consistency token").toMatch(/^\d+:\d+$/);
  return answer.token as string;
}

/** Calls until `done` holds of the answer, for at most `ms`: how a client follows a background job. */
async function until(what: string, attempt: () => Promise<NodeAnswer>, done: (answer: NodeAnswer) => boolean, ms = 30_000): Promise<NodeAnswer> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await attempt();
    if (done(answer)) return answer;
    if (Date.now() > deadline) throw new Error(`${what} not done within ${ms} ms: ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Each kind of write, then its read on another node with the write's token: read-your-writes must hold for every
 * kind. Answers the write's token and what it stored (an ingest job: one entry per item).
 */
const WRITES: Record<Kind, (step: LoadStep) => Promise<{ readonly token: string; readonly written: readonly Written[] }>> = {
  async remember({ writer, reader, key, tenant, n, marker }) {
    // The run the deletion below removes (tenant 1's) or keeps (tenant 0's); the other kinds write to work runs.
    const run = `run-${tenant}`;
    const wrote = await succeedOn(writer, "engram.v2.MemoryService/Remember", { session_id: run, content: `Fact number ${n} carries the marker ${marker}.` }, key);
    const token = tokenOf(wrote);
    const id = String(wrote.body["entry_id"]);
    const read = await succeedOn(reader, "engram.v2.MemoryService/Query", { run_id: run, query: marker, mode: "direct_bypass" }, key, token);
    expect(evidenceIds(read), `write ${n} (remember) read on another node with its token`).toContain(id);
    return { token, written: [{ kind: "remember", tenant, marker, id }] };
  },

  async ingest({ writer, reader, key, tenant, n, marker }) {
    const run = `work-${tenant}`;
    const markers = [1, 2, 3].map((k) => `${marker}i${k}`);
    const items = markers.map((item, k) => ({ item_id: item, entry_type: "fact", text: `Item ${k} of ingest job ${n} carries the marker ${item}.` }));
    // The idempotency key makes a retry after `unavailable` return the first job instead of queuing another.
    const accepted = await succeedOn(writer, "engram.v2.MemoryService/Ingest", { run_id: run, idempotency_key: marker, items }, key);
    const token = tokenOf(accepted);
    const jobId = String(accepted.body["job_id"]);
    // The job runs in the background on the node that accepted it; its completion is followed on another node, whose
    // answer carries the token of the state it was read at: `completed` there means its entries are searchable there.
    const job = await until(`ingest job ${jobId} of write ${n}`, () => succeedOn(reader, "engram.v2.MemoryService/GetIngestJob", { job_id: jobId, run_id: run }, key, token), (a) => a.body["done"] === true);
    expect(job.body["status"], JSON.stringify(job.body)).toBe("completed");
    const traces = (job.body["traces"] as { item_id: string; writes?: { record_id: string }[] }[] | undefined) ?? [];
    const written = markers.map((item): Written => ({ kind: "ingest", tenant, marker: item, id: String(traces.find((t) => t.item_id === item)?.writes?.[0]?.record_id) }));
    const seen = mergeTokens(token, job.token);
    for (const { marker: item, id } of written) {
      const read = await succeedOn(reader, "engram.v2.MemoryService/Query", { run_id: run, query: item, mode: "direct_bypass" }, key, seen);
      expect(evidenceIds(read), `write ${n} (ingest item ${item}) read on another node once its job completed there`).toContain(id);
    }
    return { token, written };
  },

  async "core-node"({ writer, reader, key, tenant, n, marker }) {
    const run = `work-${tenant}`;
    const text = `Core node of write ${n} carries the marker ${marker}.`;
    const wrote = await succeedOn(writer, "engram.v2.CoreService/InsertNode", { run_id: run, text, metadata_json: "{}" }, key);
    const token = tokenOf(wrote);
    const id = String(wrote.body["node_id"]);
    const read = await succeedOn(reader, "engram.v2.CoreService/GetNode", { id }, key, token);
    expect(read.body["node"], `write ${n} (core node) read on another node with its token`).toMatchObject({ node_id: id, run_id: run, text });
    return { token, written: [{ kind: "core-node", tenant, marker, id }] };
  },

  async lesson({ writer, reader, key, tenant, n, marker }) {
    const run = `work-${tenant}`;
    // Each lesson is about a user of its own: the validation gate would merge lessons of the same words otherwise.
    const user = `user-${marker}`;
    const wrote = await succeedOn(writer, "engram.v2.LearningService/Reflect", { run_id: run, user_id: user, lessons: [{ content: `Lesson of write ${n} carries the marker ${marker}.` }] }, key);
    const token = tokenOf(wrote);
    const decision = (wrote.body["decisions"] as { decision: string; lesson_id: string }[] | undefined)?.[0];
    expect(decision?.decision, JSON.stringify(wrote.body)).toBe("accepted");
    const id = String(decision?.lesson_id);
    const read = await succeedOn(reader, "engram.v2.LearningService/ListLessons", { run_id: run, user_id: user }, key, token);
    expect(((read.body["lessons"] as { id: string }[] | undefined) ?? []).map((l) => l.id), `write ${n} (lesson) read on another node with its token`).toContain(id);
    return { token, written: [{ kind: "lesson", tenant, marker, id }] };
  },

  async handoff({ writer, reader, key, tenant, n, marker }) {
    const run = `work-${tenant}`;
    const wrote = await succeedOn(writer, "engram.v2.CoordinationService/CreateHandoff", { run_id: run, task_id: marker, from_agent_id: "planner", to_agent_id: "builder", content: `Handoff of write ${n} carries the marker ${marker}.` }, key);
    const token = tokenOf(wrote);
    const id = String(wrote.body["handoff_id"]);
    const read = await succeedOn(reader, "engram.v2.CoordinationService/ListHandoffs", { run_id: run, limit: 200 }, key, token);
    expect(((read.body["handoffs"] as { handoff_id: string }[] | undefined) ?? []).map((h) => h.handoff_id), `write ${n} (handoff) read on another node with its token`).toContain(id);
    return { token, written: [{ kind: "handoff", tenant, marker, id }] };
  },

  async project({ writer, reader, key, tenant, n, marker }) {
    const name = `project ${marker}`;
    const wrote = await succeedOn(writer, "engram.v2.ResourcesService/CreateProject", { name, description: `Project of write ${n} carries the marker ${marker}.` }, key);
    const token = tokenOf(wrote);
    const id = String((wrote.body["project"] as { project_id?: string } | undefined)?.project_id);
    const read = await succeedOn(reader, "engram.v2.ResourcesService/GetProject", { project_id: id }, key, token);
    expect(read.body["project"], `write ${n} (project) read on another node with its token`).toMatchObject({ project_id: id, name });
    return { token, written: [{ kind: "project", tenant, marker, id }] };
  },

  async grant({ writer, reader, key, tenant, n, marker }) {
    const grant = { principal_type: "agent", principal_id: `agent-${marker}`, run_id: `work-${tenant}`, permission: "read" };
    const wrote = await succeedOn(writer, "engram.v2.CoreService/GrantPermission", grant, key);
    const token = tokenOf(wrote);
    const read = await succeedOn(reader, "engram.v2.CoreService/CheckPermission", grant, key, token);
    expect(read.body, `write ${n} (grant) read on another node with its token`).toMatchObject({ allowed: true, reason: "run_grant" });
    return { token, written: [{ kind: "grant", tenant, marker, id: grant.principal_id }] };
  },
};

/** The ids of the records a stopped node's store holds for each marker, by kind of write (read only). */
function storedIds(storage: Storage): Record<Kind, (marker: string) => string[]> {
  const carries = (text: string, marker: string): boolean => text.includes(` ${marker}.`);
  const entries = [...storage.dbs.entries.getRange()].map(({ key, value }) => decodeEntry(value, key));
  const coreNodes = [...storage.dbs.nodes.getRange()].map(({ key, value }) => decodeNode(key, value));
  const handoffs = [...storage.dbs.handoffs.getRange()].map(({ key, value }) => decodeHandoff(key, value));
  const projects = [...storage.dbs.projects.getRange()].map(({ key, value }) => decodeProject(key, value));
  // [owner, run_id, principal_type, principal_id, lane]
  const grantees = [...storage.dbs.grants.getKeys()].map((key) => String((key as unknown[])[3]));
  const entryIds = (marker: string): string[] => entries.filter((e) => carries(e.content, marker)).map((e) => e.id);
  return {
    remember: entryIds,
    ingest: entryIds,
    lesson: entryIds,
    "core-node": (marker) => coreNodes.filter((node) => carries(node.text, marker)).map((node) => String(node.id)),
    handoff: (marker) => handoffs.filter((h) => carries(h.content, marker)).map((h) => h.id),
    project: (marker) => projects.filter((p) => carries(p.description, marker)).map((p) => projectIdOf(p.seq)),
    grant: (marker) => grantees.filter((grantee) => grantee === `agent-${marker}`),
  };
}

it("survives a NATS server and an Engram node killed mid-load: every write on every node once, stores identical", async () => {
  const node0 = nodes[0] as ChildServer;
  // One tenant on each tenant shard, so that the load writes every shard (and the node serving shard 1 only takes
  // writes of its own as well as forwarded ones). Tenant 0's run is kept, tenant 1's deleted at the end.
  const byShard = new Map<number, string>();
  const tokens: string[] = [];
  for (let i = 0; byShard.size < SHARDS && i < 12; i++) {
    const created = await succeedOn(node0, "engram.v2.AuthService/CreateUser", { username: `load${i}` }, adminKey);
    tokens.push(created.token as string);
    const shard = 1 + (Number(created.body["user_id"]) % SHARDS);
    if (!byShard.has(shard)) byShard.set(shard, String(created.body["api_key"]));
  }
  expect(byShard.size).toBe(SHARDS);
  const tenants = [...byShard.values()];
  // Each tenant's key authenticates on every node once the node has applied its creation.
  for (const node of nodes.filter((n): n is ChildServer => n !== undefined)) await succeedOn(node, "engram.v2.MemoryService/Query", { run_id: "r", query: "nothing" }, tenants[0] as string, mergeTokens(...tokens));

  const written: Written[] = [];
  const WRITES_IN_LOAD = 60;
  for (let n = 0; n < WRITES_IN_LOAD; n++) {
    if (n === 20) await Promise.all([nats.kill(1), nodes[2]?.kill("SIGKILL")]).then(() => (nodes[2] = undefined));
    if (n === 40) await Promise.all([nats.restart(1), startNode(2)]);
    const live = nodes.filter((node): node is ChildServer => node !== undefined);
    if (process.env["CLUSTER_TEST_TRACE"]) fs.appendFileSync("/tmp/cluster-trace", `${n} ${Date.now()}\n`);
    const tenant = n % tenants.length;
    const kind = KINDS[n % KINDS.length] as Kind;
    const step = { writer: live[n % live.length] as ChildServer, reader: live[(n + 1) % live.length] as ChildServer, key: tenants[tenant] as string, tenant, n, marker: `zq${n}x` };
    const wrote = await WRITES[kind](step);
    tokens.push(wrote.token);
    written.push(...wrote.written);
  }
  expect(new Set(written.map((w) => w.kind))).toEqual(new Set(KINDS));
  const remembered = (tenant: number): Written => written.find((w) => w.kind === "remember" && w.tenant === tenant) as Written;
  const [kept, gone] = [remembered(0), remembered(1)];

  // Owners stay apart across nodes: one tenant's fact is not found by the other in a run of the same name.
  const other = await succeedOn(nodes[1] as ChildServer, "engram.v2.MemoryService/Query", { run_id: "run-1", query: gone.marker, mode: "direct_bypass" }, tenants[0] as string, mergeTokens(...tokens));
  expect(evidenceIds(other)).not.toContain(gone.id);

  // A run deletion on one node reaches the others.
  const deleted = await succeedOn(nodes[1] as ChildServer, "engram.v2.RunsService/DeleteRun", { run_id: "run-1" }, tenants[1] as string);
  tokens.push(deleted.token as string);
  const everything = mergeTokens(...tokens);
  for (const node of nodes.filter((n): n is ChildServer => n !== undefined)) {
    const read = await succeedOn(node, "engram.v2.MemoryService/Query", { run_id: "run-1", query: gone.marker, mode: "direct_bypass" }, tenants[1] as string, everything);
    expect(evidenceIds(read), `run deleted on ${node?.baseUrl}`).toEqual([]);
    const still = await succeedOn(node, "engram.v2.MemoryService/Query", { run_id: "run-0", query: kept.marker, mode: "direct_bypass" }, tenants[0] as string, everything);
    expect(evidenceIds(still)).toContain(kept.id);
  }

  // The log is trimmed behind a snapshot: a node whose store is empty can no longer start from the log alone.
  await untilTrimmed();
  // A fourth node joins with an empty store: it starts from the snapshot and catches up on the log's tail.
  const late = await startNode(3);
  await succeedOn(late, "engram.v2.MemoryService/Query", { run_id: "run-0", query: kept.marker }, tenants[0] as string, everything);

  // Node 1 purges the deleted run in the background, through the log. Once it has stopped, the others are brought
  // to every position it reached (its store holds them), then stopped too.
  await nodes[1]?.kill("SIGTERM");
  nodes[1] = undefined;
  const reached = await positionsOf(1);
  for (const node of nodes.filter((n): n is ChildServer => n !== undefined)) await succeedOn(node, "engram.v2.MemoryService/Query", { run_id: "run-0", query: kept.marker }, tenants[0] as string, reached);
  for (const [i, node] of nodes.entries()) {
    await node?.kill("SIGTERM");
    nodes[i] = undefined;
  }
  const digests = await Promise.all([0, 1, 2, 3].map((i) => digestOf(i)));
  for (const [i, digest] of digests.entries()) expect(digest, `node ${i}'s store against node 0's`).toEqual(digests[0]);
  // Exactly once: each acknowledged write is stored once, under the id it was acknowledged with.
  const storage = new Storage(path.join(root, "node0", "lmdb"));
  try {
    const stored = storedIds(storage);
    for (const { kind, tenant, marker, id } of written) {
      const ids = stored[kind](marker);
      // The deleted run's entries are hidden at once and purged in the background: at most the one copy meanwhile.
      if (kind === "remember" && tenant === 1) expect(ids.length <= 1 && ids.every((found) => found === id), `${kind} ${marker} stored as ${ids.join(", ")}`).toBe(true);
      else expect(ids, `${kind} ${marker} stored once, as ${id}`).toEqual([id]);
    }
  } finally {
    await storage.close();
  }
}, 300_000);
