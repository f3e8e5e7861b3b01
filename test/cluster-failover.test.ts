// Clustered mode across failures. Control events reach a subscriber on another node across NATS server failovers,
// none missed (each node reads the events stream with an ordered consumer). And a lost node's unfinished work is taken
// up: an ingest job accepted (and acknowledged) by node A, which is
// SIGKILLed while the job is still being applied, is completed by node B, which serves the same shards, once B no
// longer hears A in the shard map. Three NATS servers and two Engram nodes, child processes on loopback. Node A's
// embeddings endpoint (a fake on loopback) holds every request for the job's items unanswered, so the job is in flight
// on A, deterministically, when A is killed; B's endpoint answers. A, the first node by id, also announced the
// owner's agents' liveness: B announces it once A is lost.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { callNode, clusterNodeEnv, listenOn, mergeTokens, succeedOn } from "./harness/cluster-calls.js";
import { NatsCluster } from "./harness/nats-cluster.js";
import { mintApiKey } from "../src/auth/api-key.js";

const adminKey = mintApiKey("local").key;
const DIMENSIONS = 8;
const STALLED = "stallmark";
/** Long enough that B has noticed A is lost (SERVICE_CLUSTER_NODE_TIMEOUT_MS, 2 s) well before the agent goes idle. */
const IDLE_AFTER_MS = 8_000;

let nats: NatsCluster;
let embeddings: http.Server;
let embeddingsUrl: string;
/** Requests to node A's endpoint held unanswered; resolves `stalled` at the first. */
const held: http.ServerResponse[] = [];
let sawStall: () => void = () => undefined;
const stalled = new Promise<void>((resolve) => (sawStall = resolve));
const root = fs.mkdtempSync(path.join(os.tmpdir(), "engram-cluster-takeover-"));
const nodes: ChildServer[] = [];

/** A toy deterministic model: letter-frequency buckets. */
function embed(text: string): number[] {
  const v = new Array<number>(DIMENSIONS).fill(0);
  for (const ch of text.toLowerCase()) if (ch >= "a" && ch <= "z") v[(ch.charCodeAt(0) - 97) % DIMENSIONS]! += 1;
  return v;
}

function nodeEnv(i: number, endpoint: "stall" | "answer"): Record<string, string> {
  return {
    ...clusterNodeEnv({ root, index: i, natsUrls: nats.urls, adminKey, shards: 2 }),
    SERVICE_EMBEDDINGS_URL: `${embeddingsUrl}/${endpoint}/v1`,
    SERVICE_EMBEDDINGS_MODEL: "toy-8",
    SERVICE_EMBEDDINGS_TIMEOUT_MS: "600000",
    SERVICE_CLUSTER_NODE_TIMEOUT_MS: "2000",
    SERVICE_AGENT_IDLE_AFTER_MS: String(IDLE_AFTER_MS),
    SERVICE_AGENT_GONE_AFTER_MS: "600000",
  };
}

beforeAll(async () => {
  ensureBuilt();
  embeddings = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const { input, model } = JSON.parse(body) as { input: string[]; model: string };
      if (req.url?.startsWith("/stall/") && input.some((text) => text.includes(STALLED))) {
        held.push(res);
        sawStall();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model, data: input.map((text, index) => ({ index, embedding: embed(text) })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => embeddings.listen(0, "127.0.0.1", resolve));
  embeddingsUrl = `http://127.0.0.1:${(embeddings.address() as AddressInfo).port}`;
  nats = await NatsCluster.start(3);
  nodes.push(await startChild(nodeEnv(0, "stall")), await startChild(nodeEnv(1, "answer")));
}, 120_000);

afterAll(async () => {
  for (const node of nodes) await node.kill("SIGKILL");
  await nats?.stop();
  for (const res of held) res.destroy();
  await new Promise<void>((resolve) => embeddings.close(() => resolve()));
  fs.rmSync(root, { recursive: true, force: true });
});

it("delivers every control event of a write on one node to a subscriber on another while each NATS server fails in turn", async () => {
  const [a, b] = nodes as [ChildServer, ChildServer];
  const user = await succeedOn(a, "engram.v2.AuthService/CreateUser", { username: "listener" }, adminKey);
  const key = String(user.body["api_key"]);
  // The stream on B carries no token: B is brought to the user's creation first.
  await succeedOn(b, "engram.v2.MemoryService/Query", { run_id: "warm-up", query: "nothing" }, key, user.token);
  const events = listenOn(b, "engram.v2.EventsService/Subscribe", { event_types: ["entry.created"] }, key);
  try {
    await events.until((e) => e["type"] === "subscribed");
    // Whichever server B's connection (or the stream's leader) is on fails once: B resumes after its last event.
    const ids: string[] = [];
    for (const server of [0, 1, 2]) {
      await nats.kill(server);
      ids.push(String((await succeedOn(a, "engram.v2.MemoryService/Remember", { session_id: "failover", content: `written while NATS server ${server} was down` }, key)).body["entry_id"]));
      await nats.restart(server);
    }
    ids.push(String((await succeedOn(a, "engram.v2.MemoryService/Remember", { session_id: "failover", content: "written once all were back" }, key)).body["entry_id"]));
    await events.until((e) => String(e["payload"]).includes(ids[3] as string), 60_000);
    const delivered = events.events.filter((e) => e["type"] === "entry.created").map((e) => ids.find((id) => String(e["payload"]).includes(id)));
    expect(delivered).toEqual(ids);
  } finally {
    events.close();
  }
}, 120_000);

it("completes on another node an ingest job whose node was killed while applying it", async () => {
  const [a, b] = nodes as [ChildServer, ChildServer];
  const user = await succeedOn(a, "engram.v2.AuthService/CreateUser", { username: "taker" }, adminKey);
  const key = String(user.body["api_key"]);
  const accepted = await succeedOn(a, "engram.v2.MemoryService/Ingest", { run_id: "handover", items: [{ text: `${STALLED} alpha: the deploy window is Tuesday` }, { text: `${STALLED} beta: rollbacks need two approvals` }] }, key);
  const jobId = String(accepted.body["job_id"]);
  const token = mergeTokens(user.token, accepted.token);
  await stalled;
  // B holds the accepted job (replicated with the acknowledgement) and leaves it to A while A is alive.
  const meanwhile = await succeedOn(b, "engram.v2.MemoryService/GetIngestJob", { job_id: jobId }, key, token);
  expect(meanwhile.body["status"]).toBe("queued");

  // A takes the agent's heartbeat; B's subscriber would hear A's announcements through the event relay.
  const events = listenOn(b, "engram.v2.EventsService/Subscribe", { event_types: ["agent.*"] }, key);
  await events.until((e) => e["type"] === "subscribed");
  await succeedOn(a, "engram.v2.CoordinationService/RegisterAgent", { run_id: "handover", agent_id: "watcher" }, key);

  await a.kill("SIGKILL");
  // B no longer hears A within SERVICE_CLUSTER_NODE_TIMEOUT_MS (2 s) and takes the job up: bounded wait, polled.
  let job = meanwhile.body;
  for (let attempt = 0; job["done"] !== true; attempt++) {
    if (attempt > 300) throw new Error(`the job was not taken up: ${JSON.stringify(job)}\n${b.stdout().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    job = (await succeedOn(b, "engram.v2.MemoryService/GetIngestJob", { job_id: jobId }, key)).body;
  }
  expect(job).toMatchObject({ status: "completed", item_count: 2, entry_count: 2 });
  const found = await succeedOn(b, "engram.v2.MemoryService/Query", { run_id: "handover", query: "rollbacks approvals" }, key);
  expect(JSON.stringify(found.body["evidence"])).toContain("rollbacks need two approvals");
  // Calls for A's shards are no longer forwarded to A: B serves them itself (it serves every shard).
  const direct = await callNode(b, "engram.v2.MemoryService/GetIngestJob", { job_id: jobId }, key);
  expect(direct.status).toBe(200);

  // The agent goes idle after A was lost: B, now the first live node of the owner's shard, announces it, once.
  try {
    const idle = await events.until((e) => e["type"] === "agent.liveness_changed", IDLE_AFTER_MS + 10_000);
    expect(JSON.parse(String(idle["payload"]))).toMatchObject({ agent_id: "watcher", from: "active", to: "idle" });
    // Event ids name the node that published them.
    expect(String(idle["id"])).toMatch(/_node1$/);
    expect(events.events.filter((e) => e["type"] === "agent.liveness_changed")).toHaveLength(1);
  } finally {
    events.close();
  }
}, 120_000);
