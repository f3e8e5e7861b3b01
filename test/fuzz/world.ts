// The fuzzer's world: a built server in a child process (so a crash or a leak is seen), its users and keys, records
// for the fuzz user and for a victim whose contents carry a canary, and the victim's data read back through the API.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { mintApiKey } from "../../src/auth/api-key.js";
import { ensureBuilt, startChild, type ChildServer } from "../harness/child-server.js";
import { createUser } from "../harness/users.js";
import type { Keys } from "./keys.js";

export interface ServerOptions {
  readonly maxRequestBytes: number;
  /** "hashed" is quick to start; "wordvec" is the default embedder. */
  readonly embedder: "hashed" | "wordvec";
}

export interface FuzzServer {
  readonly child: ChildServer;
  readonly port: number;
  readonly dataDir: string;
  readonly adminKey: string;
  stop(): Promise<void>;
}

export async function startFuzzServer(options: ServerOptions): Promise<FuzzServer> {
  ensureBuilt();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-fuzz-"));
  const adminKey = mintApiKey("local").key;
  const child = await startChild({
    SERVICE_DATA_DIR: dataDir,
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_LOG_LEVEL: "warn",
    SERVICE_EMBEDDER: options.embedder,
    SERVICE_MAX_REQUEST_BYTES: String(options.maxRequestBytes),
    // Every core route open, so the fuzzer reaches their handlers and not only the policy gate.
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true",
  });
  // However the fuzzer ends (an interrupted `make torture` included), the server and its data go with it.
  const cleanUp = (): void => {
    child.process.kill("SIGKILL");
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  process.once("exit", cleanUp);
  return {
    child,
    port: Number(new URL(child.baseUrl).port),
    dataDir,
    adminKey,
    async stop() {
      process.off("exit", cleanUp);
      if (child.process.exitCode === null && child.process.signalCode === null) await child.kill("SIGTERM");
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

type Json = Record<string, unknown>;

/** A Connect JSON call that must succeed (set-up and victim reads). */
export async function rpc(baseUrl: string, method: string, body: Json, key: string): Promise<Json> {
  const response = await fetch(`${baseUrl}/engram.v2.${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${method}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

export interface Users {
  readonly keys: Keys;
  readonly names: { readonly fuzz: string; readonly intruder: string; readonly victim: string };
}

export async function createUsers(server: FuzzServer): Promise<Users> {
  const baseUrl = server.child.baseUrl;
  const names = { fuzz: "fuzzer", intruder: "intruder", victim: "victim" };
  const fuzz = await createUser(baseUrl, server.adminKey, names.fuzz);
  const intruder = await createUser(baseUrl, server.adminKey, names.intruder);
  const victim = await createUser(baseUrl, server.adminKey, names.victim);
  const revoked = await createUser(baseUrl, server.adminKey, "revoked");
  await rpc(baseUrl, "AuthService/RevokeUserApiKey", { username: "revoked" }, server.adminKey);
  return { keys: { fuzz, intruder, victim, revoked, admin: server.adminKey }, names };
}

/** Ids of one owner's seeded records. */
export interface Seeded {
  readonly runId: string;
  readonly projectId: string;
  readonly agentId: string;
  readonly nodeId: string;
  readonly answers: Json[];
}

/** One of each kind of record for an owner; `mark` is written into every content, name and metadata. */
export async function seedOwner(baseUrl: string, key: string, mark: string): Promise<Seeded> {
  const runId = `run-${randomBytes(4).toString("hex")}`;
  const agentId = "agent-a";
  const call = (method: string, body: Json): Promise<Json> => rpc(baseUrl, method, body, key);
  const answers: Json[] = [];
  const keep = async (method: string, body: Json): Promise<Json> => {
    const answer = await call(method, body);
    answers.push(answer);
    return answer;
  };
  for (let i = 0; i < 3; i++) {
    await keep("MemoryService/Remember", { session_id: runId, agent_id: agentId, content: `deploy step ${i} failed on cache ${mark}`, metadata_json: JSON.stringify({ mark }) });
  }
  await keep("MemoryService/ArchiveBlock", { run_id: runId, content: `artifact ${mark}` });
  await keep("MemoryService/AppendActivity", { run_id: runId, agent_id: agentId, activity: { type: "tool_call", payload: `payload ${mark}` } });
  await keep("LearningService/Reflect", { run_id: runId, lessons: [{ content: `always warm the cache before deploy ${mark}`, lesson_type: "success" }] });
  await keep("LearningService/RecordStepOutcome", { run_id: runId, step_id: "s1", outcome: "success", rationale: `ok ${mark}` });
  await keep("CoordinationService/CreateHandoff", { run_id: runId, task_id: "t1", from_agent_id: agentId, to_agent_id: "agent-b", content: `handoff ${mark}` });
  await keep("PlanningService/SetVariable", { run_id: runId, name: "v1", value_json: JSON.stringify({ mark }) });
  const project = await keep("ResourcesService/CreateProject", { name: `project ${mark}`, description: mark });
  const projectId = String((project["project"] as Json | undefined)?.["project_id"] ?? "");
  await keep("ResourcesService/CreateAgentDefinition", { project_id: projectId, agent_id: agentId, system_prompt_content: `You deploy ${mark}` });
  await keep("ResourcesService/CreateSkill", { project_id: projectId, name: "skill-a", instructions: `do it ${mark}` });
  const node = await keep("CoreService/InsertNode", { run_id: runId, text: `node ${mark}`, metadata_json: JSON.stringify({ mark }) });
  await keep("CoreService/WriteScratchpad", { session_id: runId, key: "k1", content: `scratch ${mark}` });
  return { runId, projectId, agentId, nodeId: String(node["node_id"] ?? ""), answers };
}

/** The victim's data as the victim's key reads it, one answer per route; must not change while the fuzzer runs. */
export async function readVictim(baseUrl: string, key: string, seeded: Seeded): Promise<Record<string, string>> {
  const { runId, projectId, agentId, nodeId } = seeded;
  const reads: [string, Json][] = [
    ["RunsService/ListRuns", { limit: 100 }],
    ["MemoryService/ListActivity", { run_id: runId, limit: 500, sort: "asc" }],
    ["MemoryService/ExportActivity", { run_id: runId, sort: "asc" }],
    ["MemoryService/GetIngestStats", { run_id: runId }],
    ["LearningService/ListLessons", { run_id: runId, limit: 100 }],
    ["CoordinationService/ListHandoffs", { run_id: runId }],
    ["PlanningService/ListVariables", { run_id: runId }],
    ["ResourcesService/ListProjects", {}],
    ["ResourcesService/GetProject", { project_id: projectId }],
    ["ResourcesService/ListAgentDefinitions", { project_id: projectId }],
    ["ResourcesService/GetPrompt", { project_id: projectId, agent_id: agentId }],
    ["ResourcesService/ListSkills", { project_id: projectId }],
    ["CoreService/GetNode", { id: nodeId }],
    ["CoreService/ReadScratchpad", { session_id: runId }],
  ];
  const out: Record<string, string> = {};
  for (const [method, body] of reads) out[method] = JSON.stringify(await rpc(baseUrl, method, body, key));
  return out;
}
