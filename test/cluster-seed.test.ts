// A store written elsewhere starts a new cluster: a standalone Engram's data directory (or a backup restored into
// one), started as the first node of a cluster whose log is empty, becomes the cluster's starting state, and a node
// joining later with an empty data directory starts from it. Once the log was written, such a store is refused with
// a clear message instead of mixing its records into the cluster's. Three NATS servers; Engram nodes are child
// processes on loopback.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { mergeTokens, succeedOn } from "./harness/cluster-calls.js";
import { NatsCluster } from "./harness/nats-cluster.js";
import { mintApiKey } from "../src/auth/api-key.js";

const adminKey = mintApiKey("local").key;
let nats: NatsCluster;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "engram-cluster-seed-"));
const running: ChildServer[] = [];

function env(dir: string, clustered: { node: string } | undefined): Record<string, string> {
  return {
    SERVICE_DATA_DIR: path.join(root, dir),
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_LOG_LEVEL: "warn",
    SERVICE_EMBEDDER: "hashed",
    SERVICE_CLUSTER_NATS_URL: clustered === undefined ? "" : nats.urls.join(","),
    ...(clustered === undefined ? {} : { SERVICE_CLUSTER_NODE_ID: clustered.node, SERVICE_CLUSTER_SHARD_COUNT: "2", SERVICE_CLUSTER_READ_WAIT_MS: "15000" }),
  };
}

async function start(dir: string, clustered?: { node: string }): Promise<ChildServer> {
  const child = await startChild(env(dir, clustered));
  running.push(child);
  return child;
}

/** A standalone server's store with one user's facts; answers the user's key once the server has stopped. */
async function standaloneStore(dir: string, username: string, facts: readonly string[]): Promise<string> {
  const alone = await start(dir);
  const key = String((await succeedOn(alone, "engram.v2.AuthService/CreateUser", { username }, adminKey)).body["api_key"]);
  for (const content of facts) await succeedOn(alone, "engram.v2.MemoryService/Remember", { session_id: "history", content }, key);
  await alone.kill("SIGTERM");
  return key;
}

function contents(answer: { body: Record<string, unknown> }): string {
  return JSON.stringify(answer.body["evidence"] ?? []);
}

beforeAll(async () => {
  ensureBuilt();
  nats = await NatsCluster.start(3);
}, 60_000);

afterAll(async () => {
  for (const child of running) await child.kill("SIGKILL");
  await nats?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

it("starts a cluster from a standalone store; a later node starts from it; a foreign store is then refused", async () => {
  const key = await standaloneStore("alone", "pioneer", ["The standalone era used port 7001.", "Deploys were on Thursdays then."]);

  // The standalone store becomes the first node of a cluster whose log is empty: its records are the cluster's.
  const first = await start("alone", { node: "first" });
  const onFirst = await succeedOn(first, "engram.v2.MemoryService/Query", { run_id: "history", query: "standalone era port" }, key);
  expect(contents(onFirst)).toContain("port 7001");

  // A node with an empty data directory starts from the first node's store (its snapshot) and the log's tail.
  const wrote = await succeedOn(first, "engram.v2.MemoryService/Remember", { session_id: "history", content: "The cluster era uses port 7002." }, key);
  const second = await start("empty", { node: "second" });
  const onSecond = await succeedOn(second, "engram.v2.MemoryService/Query", { run_id: "history", query: "era port", limit: 10 }, key, wrote.token);
  expect(contents(onSecond)).toContain("port 7001");
  expect(contents(onSecond)).toContain("port 7002");
  // The key made on the standalone server authenticates there too, and writes there reach the first node.
  const back = await succeedOn(second, "engram.v2.MemoryService/Remember", { session_id: "history", content: "Rollbacks need two approvals." }, key);
  const onFirstAgain = await succeedOn(first, "engram.v2.MemoryService/Query", { run_id: "history", query: "rollbacks approvals" }, key, mergeTokens(wrote.token, back.token));
  expect(contents(onFirstAgain)).toContain("two approvals");

  // Another standalone store cannot join once the log was written: its records would never agree with the log's.
  await standaloneStore("other", "latecomer", ["A different history."]);
  const refused = await start("other", { node: "third" }).then(
    () => "",
    (e: unknown) => String(e),
  );
  expect(refused).toContain("not from cluster");
  expect(refused).toContain("empty data directory");
}, 180_000);
