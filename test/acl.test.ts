// Access grants: the routes, their enforcement on control reads, their survival across restarts, and policy gates.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, type Caller, type JsonObject } from "./harness/callers.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { waitForJob } from "./harness/memory.js";
import { mintApiKey } from "../src/auth/api-key.js";

const OPEN = { SERVICE_CORE_ALLOW_ALL: "true" };

async function post(server: TestServer, key: string, route: string, body: object): Promise<{ status: number; json: JsonObject }> {
  const response = await fetch(`${server.baseUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as JsonObject };
}

function contents(json: JsonObject): string[] {
  return (json["evidence"] as JsonObject[]).map((e) => String(e["content"]));
}

describe("grants on runs", () => {
  const dataDir = tempDataDir();
  const admin = mintApiKey("local").key;
  let server: TestServer;
  let alice: string;
  let bob: string;
  let archived: string;

  beforeAll(async () => {
    server = await startTestServer({ ...OPEN, SERVICE_ADMIN_KEY: admin }, dataDir);
    alice = await createUser(server.baseUrl, admin, "alice");
    bob = await createUser(server.baseUrl, admin, "bob");
    const accepted = await post(server, alice, "/v2/control/ingest", {
      run_id: "shared",
      items: [
        { text: "The incident bridge number is 4471." },
        { text: "The on-call rotation for ops changes on Mondays.", lane: "ops" },
        { text: "Finance closes the books on the 5th.", lane: "finance" },
      ],
    });
    const rest = callerFor("rest", server.baseUrl, server.port);
    await waitForJob(rest, alice, String(accepted.json["job_id"]));
    archived = String((await post(server, alice, "/v2/control/archive", { run_id: "shared", content: "runbook v2" })).json["reference_id"]);
  });
  afterAll(async () => server.close());

  const ask = async (key: string, query: string): Promise<string[]> => {
    const r = await post(server, key, "/v2/control/query", { run_id: "shared", query, limit: 20 });
    expect(r.status).toBe(200);
    return contents(r.json);
  };

  it("another user reads nothing of a run without a grant", async () => {
    expect(await ask(bob, "incident bridge number")).toEqual([]);
    expect((await post(server, bob, "/v2/control/dereference", { reference_id: archived })).json["found"]).toBe(false);
    const check = await post(server, alice, "/v2/core/acl/check", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" });
    expect(check.json).toMatchObject({ allowed: false, reason: "none" });
  });

  it("a lane grant opens that lane only; a run grant opens the run; revoking closes it again", async () => {
    const laneGrant = await post(server, alice, "/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: "shared", lane: "ops", permission: "read" });
    expect(laneGrant.status).toBe(200);
    expect(await ask(bob, "on-call rotation ops Mondays")).toContain("The on-call rotation for ops changes on Mondays.");
    const laneOnly = await ask(bob, "incident bridge number finance books");
    expect(laneOnly).not.toContain("The incident bridge number is 4471.");
    expect(laneOnly).not.toContain("Finance closes the books on the 5th.");
    expect((await post(server, alice, "/v2/core/acl/check", { principal_type: "user", principal_id: "bob", run_id: "shared", lane: "ops", permission: "read" })).json).toMatchObject({ allowed: true, reason: "lane_grant" });
    const activity = async (): Promise<string[]> =>
      ((await post(server, bob, "/v2/control/activity", { run_id: "shared", limit: 500 })).json["entries"] as JsonObject[]).map((e) => String(e["content"]));
    expect(await activity()).toEqual(["The on-call rotation for ops changes on Mondays."]);

    await post(server, alice, "/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" });
    expect(await ask(bob, "incident bridge number")).toContain("The incident bridge number is 4471.");
    expect((await post(server, bob, "/v2/control/dereference", { reference_id: archived })).json["content"]).toBe("runbook v2");
    expect((await activity()).sort()).toEqual(
      ["Finance closes the books on the 5th.", "The incident bridge number is 4471.", "The on-call rotation for ops changes on Mondays.", "runbook v2"].sort(),
    );
    const context = await post(server, bob, "/v2/control/context", { run_id: "shared", query: "finance books" });
    expect(String(context.json["context_block"])).toContain("Finance closes the books");

    // Bob's own writes to a run of the same name stay his; alice sees them only if bob grants her.
    await post(server, bob, "/v2/control/remember", { session_id: "shared", content: "Bob's private note about the incident bridge." });
    expect(await ask(alice, "incident bridge")).not.toContain("Bob's private note about the incident bridge.");

    const revoked = await post(server, alice, "/v2/core/acl/revoke", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "read" });
    expect(revoked.json["success"]).toBe(true);
    expect(await ask(bob, "incident bridge number")).not.toContain("The incident bridge number is 4471.");
    expect(await ask(bob, "on-call rotation ops Mondays")).toContain("The on-call rotation for ops changes on Mondays.");
  });

  it("grants survive a restart (the cache is rebuilt from storage)", async () => {
    await server.close();
    server = await startTestServer({ ...OPEN, SERVICE_ADMIN_KEY: admin }, dataDir);
    expect(await ask(bob, "on-call rotation ops Mondays")).toContain("The on-call rotation for ops changes on Mondays.");
    expect(await ask(bob, "incident bridge number")).not.toContain("The incident bridge number is 4471.");
  });

  it("validates grants: unknown user 404, bad permission or principal type 400, owner check", async () => {
    expect((await post(server, alice, "/v2/core/acl/grant", { principal_type: "user", principal_id: "nobody", run_id: "shared", permission: "read" })).status).toBe(404);
    const badPermission = await post(server, alice, "/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: "shared", permission: "admin" });
    expect(badPermission.status).toBe(400);
    expect(String(badPermission.json["message"])).toContain("permission");
    const badType = await post(server, alice, "/v2/core/acl/grant", { principal_type: "robot", principal_id: "bob", run_id: "shared", permission: "read" });
    expect(String(badType.json["message"])).toContain("principal_type");
    const noRun = await post(server, alice, "/v2/core/acl/check", { principal_type: "user", principal_id: "bob", permission: "read" });
    expect(String(noRun.json["message"])).toContain("run_id");
    expect((await post(server, alice, "/v2/core/acl/check", { principal_type: "user", principal_id: "alice", run_id: "shared", permission: "write" })).json).toMatchObject({ allowed: true, reason: "owner" });
    await post(server, alice, "/v2/core/acl/grant", { principal_type: "agent", principal_id: "planner", run_id: "shared", permission: "write" });
    expect((await post(server, alice, "/v2/core/acl/check", { principal_type: "agent", principal_id: "planner", run_id: "shared", permission: "read" })).json).toMatchObject({ allowed: true, reason: "run_grant" });
  });

  it("works the same over gRPC", async () => {
    const grpc: Caller = callerFor("grpc", server.baseUrl, server.port);
    try {
      const r = await grpc.call("engram.v2.CoreService/CheckPermission", { principal_type: "user", principal_id: "bob", run_id: "shared", lane: "ops", permission: "read" }, alice);
      expect(r.code).toBe("ok");
      expect(r.body).toMatchObject({ allowed: true, reason: "lane_grant" });
    } finally {
      grpc.close();
    }
  });
});

describe("policy gates", () => {
  let closed: TestServer;
  let chosen: TestServer;
  beforeAll(async () => {
    closed = await startTestServer();
    chosen = await startTestServer({ SERVICE_CORE_ALLOWED_ROUTES: "POST /v2/core/acl/check, /v2/core/acl/gr*" });
  });
  afterAll(async () => {
    await closed.close();
    await chosen.close();
  });

  it("denies closed core routes with 403 naming the flag, over every transport", async () => {
    for (const transport of ["rest", "connect", "grpc"] as const) {
      const c = callerFor(transport, closed.baseUrl, closed.port);
      try {
        const insert = await c.call("engram.v2.CoreService/InsertNode", { run_id: "r", text: "x" }, closed.adminKey);
        expect(insert.code, transport).toBe("permission_denied");
        expect(insert.message).toContain("SERVICE_CORE_ALLOW_ALL");
        const search = await c.call("engram.v2.CoreService/SearchNodes", { query_text: "x" }, closed.adminKey);
        expect(search.message).toContain("SERVICE_CORE_ENABLE_DIRECT_SEARCH");
        const list = await c.call("engram.v2.CoreService/ListCoreSubscriptions", {}, closed.adminKey);
        expect(list.message).toContain("SERVICE_CORE_ENABLE_DIRECT_PUBSUB");
        if (transport === "rest") expect(insert.status).toBe(403);
      } finally {
        c.close();
      }
    }
  });

  it("always allows batch insert, storage stats and compaction; health and auth are not gated", async () => {
    const headers = { authorization: `Bearer ${closed.adminKey}`, "content-type": "application/json" };
    const batch = await fetch(`${closed.baseUrl}/v2/core/batch_insert`, { method: "POST", headers, body: JSON.stringify({ nodes: [] }) });
    expect(batch.status).not.toBe(403);
    expect((await fetch(`${closed.baseUrl}/v2/core/storage/stats`, { headers })).status).not.toBe(403);
    expect((await fetch(`${closed.baseUrl}/v2/core/storage/compact`, { method: "POST", headers, body: "{}" })).status).not.toBe(403);
    expect((await fetch(`${closed.baseUrl}/v2/core/health`)).status).toBe(200);
    expect((await fetch(`${closed.baseUrl}/v2/core/auth/users`, { headers })).status).toBe(200);
  });

  it("SERVICE_CORE_ALLOWED_ROUTES opens the routes it names, by method and path or prefix", async () => {
    const headers = { authorization: `Bearer ${chosen.adminKey}`, "content-type": "application/json" };
    const check = await fetch(`${chosen.baseUrl}/v2/core/acl/check`, { method: "POST", headers, body: JSON.stringify({ principal_type: "user", principal_id: "admin", run_id: "r", permission: "read" }) });
    expect(check.status).toBe(200);
    const grant = await fetch(`${chosen.baseUrl}/v2/core/acl/grant`, { method: "POST", headers, body: JSON.stringify({ principal_type: "agent", principal_id: "a", run_id: "r", permission: "read" }) });
    expect(grant.status).toBe(200);
    const revoke = await fetch(`${chosen.baseUrl}/v2/core/acl/revoke`, { method: "POST", headers, body: JSON.stringify({ principal_type: "agent", principal_id: "a", run_id: "r" }) });
    expect(revoke.status).toBe(403);
  });
});
