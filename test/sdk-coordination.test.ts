// The public @mubit-ai/sdk's coordination calls work against Engram over HTTP unchanged: registerAgent, listAgents,
// handoff and feedback, with their effects seen through the SDK and through the lanes they set.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { startTestServer, type TestServer } from "./harness/server.js";

let server: TestServer;
let client: InstanceType<typeof Client>;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
  client = new Client({ transport: "http", endpoint: server.baseUrl, api_key: server.adminKey, run_id: "sdk-coord" });
});
afterAll(async () => server.close());

interface Agent {
  agent_id: string;
  role: string;
  status: string;
  liveness: string;
  read_scopes: string[];
  write_scopes: string[];
  shared_memory_lanes: string[];
}

it("registerAgent and listAgents round-trip an identity with its scopes and lanes", async () => {
  const registered = (await client.registerAgent({
    session_id: "sdk-coord",
    agent_id: "planner",
    role: "planner",
    capabilities: ["plan"],
    read_scopes: ["rule", "lesson", "fact"],
    write_scopes: ["lesson", "trace"],
    shared_memory_lanes: ["knowledge", "history"],
  })) as { success: boolean; agent: Agent };
  expect(registered.success).toBe(true);
  expect(registered.agent).toMatchObject({ agent_id: "planner", role: "planner", status: "active", liveness: "active", shared_memory_lanes: ["knowledge", "history"] });
  await client.registerAgent({ session_id: "sdk-coord", agent_id: "reviewer", role: "reviewer" });
  const listed = (await client.listAgents({ session_id: "sdk-coord" })) as { agents: Agent[] };
  expect(listed.agents.map((a) => [a.agent_id, a.role])).toEqual([
    ["planner", "planner"],
    ["reviewer", "reviewer"],
  ]);
  expect(listed.agents[0]?.read_scopes).toEqual(["rule", "lesson", "fact"]);
  expect(listed.agents[0]?.write_scopes).toEqual(["lesson", "trace"]);
});

it("handoff persists a pending handoff the receiver sees in its context; feedback answers it", async () => {
  const created = (await client.handoff({
    session_id: "sdk-coord",
    task_id: "task-7",
    from_agent_id: "planner",
    to_agent_id: "reviewer",
    content: "Please review the token refresh ordering fix.",
    requested_action: "review",
    metadata: { pr: 7 },
  })) as { success: boolean; handoff_id: string; status: string };
  expect(created).toMatchObject({ success: true, status: "pending" });
  expect(created.handoff_id).toMatch(/^hof_/);

  const context = (await client.getContext({ session_id: "sdk-coord", agent_id: "reviewer", query: "token refresh" })) as {
    pending_handoffs: { handoff_id: string; task_id: string; metadata_json: string }[];
  };
  expect(context.pending_handoffs.map((h) => [h.handoff_id, h.task_id])).toEqual([[created.handoff_id, "task-7"]]);
  expect(JSON.parse(context.pending_handoffs[0]?.metadata_json ?? "{}")).toEqual({ pr: 7 });

  const answered = (await client.feedback({
    session_id: "sdk-coord",
    handoff_id: created.handoff_id,
    verdict: "approve",
    comments: "Looks right.",
    from_agent_id: "reviewer",
  })) as { success: boolean; feedback_id: string; handoff_status: string };
  expect(answered).toMatchObject({ success: true, handoff_status: "approved" });
  expect(answered.feedback_id).toMatch(/^fbk_/);
  const after = (await client.getContext({ session_id: "sdk-coord", agent_id: "reviewer", query: "token refresh" })) as { pending_handoffs?: unknown[] };
  expect(after.pending_handoffs ?? []).toEqual([]);

  const again = await client.feedback({ session_id: "sdk-coord", handoff_id: created.handoff_id, verdict: "approve" }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(again).toBeInstanceOf(Error);
  expect(String((again as Error).message)).toMatch(/approved/);
});
