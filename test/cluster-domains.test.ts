// Clustered mode keeps every node's in-memory state in step with writes another node made: two Engram nodes over a
// three-server NATS JetStream cluster, each a child process on loopback. A write on node A, read on node B with its
// consistency token, must be seen there exactly as if B had made it: an access grant (and its revocation), core nodes
// (search, and core pubsub events heard by a subscriber on B), caller vector spaces, an ingest job's entries (read on B
// with the token of the answer that saw the job completed on A), a retention policy (what it expires leaves B's lists
// and counts at once, and stays expired when the policy is cleared), and agent liveness (the first node of the owner's
// shard announces its changes once; the other follows without announcing them again).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { NatsCluster } from "./harness/nats-cluster.js";
import type { JsonObject } from "./harness/callers.js";
import { clusterNodeEnv, listenOn, mergeTokens, succeedOn, type NodeAnswer } from "./harness/cluster-calls.js";
import { mintApiKey } from "../src/auth/api-key.js";

const adminKey = mintApiKey("local").key;
/** Short enough that the liveness case waits a few seconds for an agent to go idle, then gone. */
const IDLE_AFTER_MS = 1_000;
const GONE_AFTER_MS = 2_500;

let nats: NatsCluster;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "engram-cluster-domains-"));
const nodes: ChildServer[] = [];
let alice: string;
let bob: string;
/** The users' creation: every read on B carries it, so that B knows the users' keys. */
let usersToken: string;

function nodeEnv(i: number): Record<string, string> {
  return {
    ...clusterNodeEnv({ root, index: i, natsUrls: nats.urls, adminKey, shards: 2 }),
    SERVICE_EMBEDDER: "hashed",
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true",
    SERVICE_AGENT_IDLE_AFTER_MS: String(IDLE_AFTER_MS),
    SERVICE_AGENT_GONE_AFTER_MS: String(GONE_AFTER_MS),
  };
}

const nodeA = (): ChildServer => nodes[0] as ChildServer;
const nodeB = (): ChildServer => nodes[1] as ChildServer;


beforeAll(async () => {
  ensureBuilt();
  nats = await NatsCluster.start(3);
  nodes.push(...(await Promise.all([0, 1].map((i) => startChild(nodeEnv(i))))));
  const created = await Promise.all(["alice", "bob"].map((username) => succeedOn(nodeA(), "engram.v2.AuthService/CreateUser", { username }, adminKey)));
  [alice, bob] = created.map((c) => String(c.body["api_key"])) as [string, string];
  usersToken = mergeTokens(...created.map((c) => c.token));
  // The streams the cases open on B carry no token: B is brought to the users' creation first.
  await succeedOn(nodeB(), "engram.v2.MemoryService/Query", { run_id: "warm-up", query: "nothing" }, alice, usersToken);
}, 120_000);

afterAll(async () => {
  for (const node of nodes) await node.kill("SIGKILL");
  await nats?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const evidenceIds = (answer: NodeAnswer): string[] => ((answer.body["evidence"] as JsonObject[] | undefined) ?? []).map((e) => String(e["id"]));

it("a grant made on A lets its grantee read on B; its revocation on A closes the run on B again", async () => {
  const wrote = await succeedOn(nodeA(), "engram.v2.MemoryService/Remember", { session_id: "shared", content: "The deploy key rotates every Tuesday at noon." }, alice);
  const entryId = String(wrote.body["entry_id"]);
  const read = (token: string): Promise<NodeAnswer> => succeedOn(nodeB(), "engram.v2.MemoryService/Query", { run_id: "shared", query: "deploy key rotates", mode: "direct_bypass" }, bob, mergeTokens(usersToken, wrote.token, token));
  const check = async (token: string): Promise<unknown> =>
    (await succeedOn(nodeB(), "engram.v2.CoreService/CheckPermission", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" }, alice, mergeTokens(usersToken, token))).body["allowed"];
  expect(evidenceIds(await read("")), "no grant yet").not.toContain(entryId);

  const granted = await succeedOn(nodeA(), "engram.v2.CoreService/GrantPermission", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" }, alice);
  expect(await check(granted.token)).toBe(true);
  expect(evidenceIds(await read(granted.token)), "bob reads alice's run on B under the grant made on A").toContain(entryId);

  const revoked = await succeedOn(nodeA(), "engram.v2.CoreService/RevokePermission", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" }, alice);
  expect(await check(revoked.token)).toBe(false);
  expect(evidenceIds(await read(revoked.token)), "the revocation made on A closes the run on B").not.toContain(entryId);
});

it("core nodes written on A are searched on B, and B's core subscriber hears every write in order", async () => {
  const run = "core-run";
  const events = listenOn(nodeB(), "engram.v2.CoreService/SubscribeCoreEvents", { filter_type: "all" }, alice);
  try {
    await events.until((e) => e["type"] === "subscribed");
    const search = async (token: string): Promise<string[]> =>
      ((await succeedOn(nodeB(), "engram.v2.CoreService/SearchNodes", { query_text: "orbital rockets launch", run_id: run }, alice, mergeTokens(usersToken, token))).body["results"] as JsonObject[]).map((r) => String(r["node_id"]));

    const inserted = await succeedOn(nodeA(), "engram.v2.CoreService/InsertNode", { run_id: run, text: "Orbital rockets launch at dawn.", metadata_json: "{}" }, alice);
    const nodeId = String(inserted.body["node_id"]);
    expect(await search(inserted.token), "a node inserted on A is found by search on B").toContain(nodeId);
    const updated = await succeedOn(nodeA(), "engram.v2.CoreService/InsertNode", { node_id: nodeId, text: "Orbital rockets launch at dusk.", metadata_json: '{"v":2}' }, alice);
    const pad = await succeedOn(nodeA(), "engram.v2.CoreService/WriteScratchpad", { session_id: "pad", content: "a note for the crew" }, alice);
    const deleted = await succeedOn(nodeA(), "engram.v2.CoreService/DeleteNode", { id: nodeId }, alice);
    expect(await search(mergeTokens(updated.token, pad.token, deleted.token)), "a node deleted on A leaves search on B").not.toContain(nodeId);

    await events.until((e) => e["type"] === "node.deleted");
    const heard = events.events.filter((e) => e["type"] !== "subscribed");
    expect(heard.map((e) => e["type"])).toEqual(["node.inserted", "node.updated", "memory.added", "node.deleted"]);
    expect(heard[0]).toMatchObject({ node_id: nodeId, run_id: run, metadata_json: "{}" });
    expect(heard[1]).toMatchObject({ node_id: nodeId, run_id: run, metadata_json: '{"v":2}' });
    expect(heard[2]).toMatchObject({ session_id: "pad" });
    expect(JSON.parse(String(heard[2]?.["entry_json"]))).toMatchObject({ content: "a note for the crew" });
    expect(heard[3]).toMatchObject({ node_id: nodeId });
  } finally {
    events.close();
  }
});

it("vectors stored in a caller vector space on A are searched in that space on B", async () => {
  const vec = (seed: number): number[] => Array.from({ length: 8 }, (_, i) => Math.sin((i + 1) * 12.9898 + seed * 78.233));
  const texts = ["Otters hold hands while they sleep.", "Glaciers carve valleys.", "Bees dance to share directions."];
  const batch = await succeedOn(nodeA(), "engram.v2.MemoryService/BatchInsert", { run_id: "spaces", items: texts.map((text, i) => ({ text, vector_space: "small", embedding: vec(i) })) }, alice);
  const ids = batch.body["entry_ids"] as string[];
  expect(ids).toHaveLength(3);
  // A query word no entry holds: only the space's vectors can rank.
  const near = vec(1).map((x, i) => x + 0.01 * Math.cos(i));
  const answer = await succeedOn(nodeB(), "engram.v2.MemoryService/Query", { run_id: "spaces", query: "zqxvjk", vector_space: "small", embedding: near }, alice, mergeTokens(usersToken, batch.token));
  expect(evidenceIds(answer)[0], "the entry nearest the query vector in the space written on A").toBe(ids[1]);
});

it("an ingest job seen completed on A answers a token with which B reads the job's entries", async () => {
  const accepted = await succeedOn(nodeA(), "engram.v2.MemoryService/Ingest", { run_id: "jobs", items: [{ text: "The zqxingest deploy window is Tuesday." }, { text: "Rollbacks need two zqxingest approvals." }] }, alice);
  let job = await succeedOn(nodeA(), "engram.v2.MemoryService/GetIngestJob", { job_id: accepted.body["job_id"] }, alice);
  for (let attempt = 0; job.body["done"] !== true; attempt++) {
    if (attempt > 300) throw new Error(`job not done: ${JSON.stringify(job.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    job = await succeedOn(nodeA(), "engram.v2.MemoryService/GetIngestJob", { job_id: accepted.body["job_id"] }, alice);
  }
  expect(job.body["status"]).toBe("completed");
  // The job's entries were written by A's worker, after the Ingest call answered: the read's own token covers them.
  expect(job.token, "a read answers the position it was read at").toMatch(/^\d+:\d+$/);
  const read = await succeedOn(nodeB(), "engram.v2.MemoryService/Query", { run_id: "jobs", query: "zqxingest", limit: 10 }, alice, job.token);
  expect(evidenceIds(read)).toHaveLength(2);
});

it("a retention policy set on A expires entries on B at once, out of every list and count, and for good", async () => {
  // An entry as old as 2024 (an import keeps its creation time): the policy's day is long over for it, no clock needed.
  const source = await succeedOn(nodeA(), "engram.v2.MemoryService/Remember", { session_id: "retention-src", content: "The zqxretain cache warms at six." }, bob);
  const lines: string[] = [];
  let token = "";
  do {
    const page = await succeedOn(nodeA(), "engram.v2.TenantService/ExportTenant", { page_token: token, limit: 1000 }, bob, mergeTokens(usersToken, source.token));
    lines.push(...(page.body["lines"] as string[]));
    token = String(page.body["next_page_token"] ?? "");
  } while (token !== "");
  const entry = JSON.parse(lines.find((l) => l.includes("zqxretain")) as string) as { kind: string; id: string; record: JsonObject };
  const old = { ...entry, id: `${entry.id}-old`, record: { ...entry.record, runId: "retention-old", createdAt: Date.UTC(2024, 2, 1), updatedAt: Date.UTC(2024, 2, 1) } };
  const imported = await succeedOn(nodeA(), "engram.v2.TenantService/ImportTenant", { lines: [JSON.stringify(old)] }, bob);
  const onB = async (written: string): Promise<{ entries: JsonObject[]; runs: JsonObject[]; policy: unknown }> => {
    const at = mergeTokens(usersToken, imported.token, written);
    const activity = await succeedOn(nodeB(), "engram.v2.MemoryService/ListActivity", { run_id: "retention-old", limit: 10 }, bob, at);
    const runs = await succeedOn(nodeB(), "engram.v2.RunsService/ListRuns", {}, bob, at);
    const policy = await succeedOn(nodeB(), "engram.v2.RunsService/GetRetentionPolicy", { run_id: "retention-old" }, bob, at);
    return { entries: activity.body["entries"] as JsonObject[], runs: (runs.body["runs"] as JsonObject[]).filter((r) => r["run_id"] === "retention-old"), policy: policy.body["policy"] };
  };
  const before = await onB("");
  expect(before.entries.map((e) => e["content"])).toEqual(["The zqxretain cache warms at six."]);
  expect(before.runs.map((r) => r["entry_count"])).toEqual([1]);

  const set = await succeedOn(nodeA(), "engram.v2.RunsService/SetRetentionPolicy", { run_id: "retention-old", policy: { rules: [{ entry_type: "fact", max_age_seconds: 86_400 }] } }, bob);
  const expired = await onB(set.token);
  expect(expired.entries, "the policy set on A expired the entry on B").toEqual([]);
  expect(expired.runs, "and its run left B's run listing").toEqual([]);
  expect(expired.policy).toMatchObject({ rules: [{ entry_type: "fact", max_age_seconds: "86400" }] });
  // Alice's memory, on B, is not bob's policy's business.
  const alices = await succeedOn(nodeB(), "engram.v2.MemoryService/Query", { run_id: "shared", query: "deploy key rotates", mode: "direct_bypass" }, alice, mergeTokens(usersToken, set.token));
  expect(evidenceIds(alices).length).toBeGreaterThan(0);

  const cleared = await succeedOn(nodeA(), "engram.v2.RunsService/ClearRetentionPolicy", { run_id: "retention-old" }, bob);
  const after = await onB(cleared.token);
  expect(after.policy).toBeUndefined();
  expect(after.entries, "expiry is final on B too").toEqual([]);
});

it("agent liveness is announced once, by the first node of the shard, which the other node follows", async () => {
  const events = listenOn(nodeB(), "engram.v2.EventsService/Subscribe", { event_types: ["agent.*"] }, alice);
  const changes = (): { from: string; to: string; heartbeat_at: string }[] =>
    events.events.filter((e) => e["type"] === "agent.liveness_changed").map((e) => JSON.parse(String(e["payload"])) as { from: string; to: string; heartbeat_at: string });
  try {
    await events.until((e) => e["type"] === "subscribed");
    const registered = await succeedOn(nodeA(), "engram.v2.CoordinationService/RegisterAgent", { run_id: "crew", agent_id: "watcher" }, alice);
    await events.until((e) => e["type"] === "agent.liveness_changed", IDLE_AFTER_MS + 10_000);
    // The agent beats again on B. A, the first node of the shard, announces it active again once it has applied the
    // heartbeat, then idle and gone as that heartbeat ages (not gone by the registration's age); B announces nothing.
    const beat = await succeedOn(nodeB(), "engram.v2.CoordinationService/AgentHeartbeat", { run_id: "crew", agent_id: "watcher" }, alice, mergeTokens(usersToken, registered.token));
    const heartbeatAt = Date.parse(String((beat.body["agent"] as JsonObject)["heartbeat_at"]));
    await events.until((e) => e["type"] === "agent.liveness_changed" && String(e["payload"]).includes('"to":"gone"'), GONE_AFTER_MS + 10_000);
    expect(changes().map(({ from, to }) => `${from}>${to}`), JSON.stringify(events.events)).toEqual(["active>idle", "idle>active", "active>idle", "idle>gone"]);
    expect(Date.parse((changes()[3] as { heartbeat_at: string }).heartbeat_at), "gone by the age of B's heartbeat").toBe(heartbeatAt);
  } finally {
    events.close();
  }
});
