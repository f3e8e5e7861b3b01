// One table of API cases, run over REST (fetch), Connect (fetch) and gRPC (@grpc/grpc-js).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, TRANSPORTS, type Caller, type Json, type JsonObject } from "./harness/callers.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

interface Fixture {
  readonly server: TestServer;
  readonly admin: string;
  readonly alice: string;
  readonly bob: string;
  readonly revoked: string;
  /** Unique per transport, so the runs over each transport do not see each other's writes. */
  readonly scope: string;
}

const REMEMBER = "engram.v2.MemoryService/Remember";
const RECALL = "engram.v2.MemoryService/Recall";

function contents(body: JsonObject): string[] {
  return (body["evidence"] as JsonObject[]).map((e) => String(e["content"]));
}

function expectValidCitations(body: JsonObject): void {
  const evidence = body["evidence"] as Json[];
  for (const index of body["citations"] as number[]) {
    expect(Number.isInteger(index)).toBe(true);
    expect(index).toBeGreaterThanOrEqual(0);
    expect(index).toBeLessThan(evidence.length);
  }
}

type Case = readonly [string, (c: Caller, f: Fixture) => Promise<void>];

const CASES: readonly Case[] = [
  [
    "remember acknowledges a durable fact",
    async (c, f) => {
      const r = await c.call(REMEMBER, { session_id: `${f.scope}-s1`, content: "The staging database is on port 5433.", intent: "fact" }, f.alice);
      expect(r.code).toBe("ok");
      expect(r.body["success"]).toBe(true);
      expect(String(r.body["entry_id"])).toMatch(/^ent_/);
      expect(r.body["entry_type"]).toBe("fact");
    },
  ],
  [
    "recall answers from the session with typed evidence and valid citations",
    async (c, f) => {
      const session = `${f.scope}-s2`;
      await c.call(REMEMBER, { session_id: session, content: "Builds run on the blue runner pool." }, f.alice);
      await c.call(REMEMBER, { session_id: session, content: "The release train leaves every Thursday." }, f.alice);
      const r = await c.call(RECALL, { session_id: session, query: "When does the release train leave?" }, f.alice);
      expect(r.code).toBe("ok");
      expect(r.body["mode"]).toBe("agent_routed");
      expect(String(r.body["final_answer"])).toContain("Thursday");
      expect(typeof r.body["confidence"]).toBe("number");
      const top = (r.body["evidence"] as JsonObject[])[0] as JsonObject;
      expect(top["content"]).toBe("The release train leaves every Thursday.");
      expect(typeof top["id"]).toBe("string");
      expect(typeof top["score"]).toBe("number");
      expect(top["is_stale"]).toBe(false);
      expect(top["superseded_by"]).toBe("");
      expect(top["retrieval_mode"]).toBe("semantic");
      expect(typeof top["reference_id"]).toBe("string");
      expect(typeof top["referenceable"]).toBe("boolean");
      expect(top["origin_entry_type"]).toBe("fact");
      expect((r.body["citations"] as number[]).length).toBeGreaterThan(0);
      expectValidCitations(r.body);
    },
  ],
  [
    "facts are session-local",
    async (c, f) => {
      await c.call(REMEMBER, { session_id: `${f.scope}-a`, content: "The vault token rotates hourly." }, f.alice);
      const r = await c.call(RECALL, { session_id: `${f.scope}-b`, query: "How often does the vault token rotate?" }, f.alice);
      expect(r.code).toBe("ok");
      expect(contents(r.body)).not.toContain("The vault token rotates hourly.");
      expect(r.body["citations"]).toEqual([]);
    },
  ],
  [
    "a global lesson is recalled in other sessions of the same user, never for another user",
    async (c, f) => {
      const lesson = `Always pin the ${f.scope} compiler version before bisecting.`;
      const w = await c.call(
        REMEMBER,
        { session_id: `${f.scope}-l1`, user_id: "u1", content: lesson, intent: "lesson", lesson_scope: "global" },
        f.alice,
      );
      expect(w.code).toBe("ok");
      expect(w.body["entry_type"]).toBe("lesson");
      const query = { session_id: `${f.scope}-l2`, user_id: "u1", query: "What should I do before bisecting the compiler?" };
      const mine = await c.call(RECALL, query, f.alice);
      expect(contents(mine.body)).toContain(lesson);
      const hit = (mine.body["evidence"] as JsonObject[]).find((e) => e["content"] === lesson) as JsonObject;
      expect(hit["retrieval_mode"]).toBe("lesson_overlay");
      expect(hit["origin_entry_type"]).toBe("lesson");
      const otherLogicalUser = await c.call(RECALL, { ...query, user_id: "u2" }, f.alice);
      expect(contents(otherLogicalUser.body)).not.toContain(lesson);
      const otherKeyOwner = await c.call(RECALL, query, f.bob);
      expect(otherKeyOwner.code).toBe("ok");
      expect(contents(otherKeyOwner.body)).not.toContain(lesson);
      const factsOnly = await c.call(RECALL, { ...query, entry_types: ["fact"] }, f.alice);
      expect(contents(factsOnly.body)).not.toContain(lesson);
    },
  ],
  [
    "a session-scoped lesson stays in its session",
    async (c, f) => {
      const lesson = `Retry ${f.scope} flaky uploads with backoff.`;
      await c.call(REMEMBER, { session_id: `${f.scope}-m1`, content: lesson, intent: "lesson" }, f.alice);
      const here = await c.call(RECALL, { session_id: `${f.scope}-m1`, query: "flaky uploads", entry_types: ["lesson"] }, f.alice);
      expect(contents(here.body)).toContain(lesson);
      const elsewhere = await c.call(RECALL, { session_id: `${f.scope}-m2`, query: "flaky uploads" }, f.alice);
      expect(contents(elsewhere.body)).not.toContain(lesson);
    },
  ],
  [
    "one user's session is invisible to another user with the same session id",
    async (c, f) => {
      const session = `${f.scope}-shared-name`;
      await c.call(REMEMBER, { session_id: session, content: "Alice's secret rollout plan uses canaries." }, f.alice);
      const r = await c.call(RECALL, { session_id: session, query: "rollout plan canaries" }, f.bob);
      expect(r.code).toBe("ok");
      expect(r.body["evidence"]).toEqual([]);
      const admin = await c.call(RECALL, { session_id: session, query: "rollout plan canaries" }, f.admin);
      expect(contents(admin.body)).toContain("Alice's secret rollout plan uses canaries.");
    },
  ],
  [
    "recall abstains when nothing supports an answer",
    async (c, f) => {
      await c.call(REMEMBER, { session_id: `${f.scope}-abs`, content: "The cafeteria opens at noon." }, f.alice);
      const r = await c.call(RECALL, { session_id: `${f.scope}-abs`, user_id: "abstainer", query: "Which Kubernetes version runs in production?" }, f.alice);
      expect(r.code).toBe("ok");
      expect(r.body["citations"]).toEqual([]);
      expect(r.body["confidence"] as number).toBeLessThan(0.3);
    },
  ],
  [
    "bad input is invalid_argument naming the field",
    async (c, f) => {
      const noSession = await c.call(REMEMBER, { content: "x" }, f.alice);
      expect(noSession.code).toBe("invalid_argument");
      // The same readable message over every transport (gRPC clients decode grpc-message per spec).
      expect(noSession.message).toBe("session_id: is required");
      const badIntent = await c.call(REMEMBER, { session_id: "s", content: "x", intent: "rumour" }, f.alice);
      expect(badIntent.code).toBe("invalid_argument");
      expect(badIntent.message).toContain("intent");
      const badType = await c.call(RECALL, { session_id: "s", query: "q", entry_types: ["gossip"] }, f.alice);
      expect(badType.code).toBe("invalid_argument");
      expect(badType.message).toContain("entry_types");
      const longSession = await c.call(REMEMBER, { session_id: "s".repeat(5000), content: "x" }, f.alice);
      expect(longSession.code).toBe("invalid_argument");
      expect(longSession.message).toContain("session_id");
      const badBudget = await c.call(RECALL, { session_id: "s", query: "q", budget: "huge" }, f.alice);
      expect(badBudget.code).toBe("invalid_argument");
      expect(badBudget.message).toContain("budget");
    },
  ],
  [
    "keys: missing, malformed, truncated, wrong instance, unknown and revoked keys are unauthenticated",
    async (c, f) => {
      const request = { session_id: "s", query: "q" };
      const [prefix, tag, keyId, secret] = f.alice.split("_") as [string, string, string, string];
      const bad = [
        undefined,
        "not-a-key",
        f.alice.slice(0, -8),
        `${prefix}_${tag}_${keyId}`,
        `${prefix}_elsewhere_${keyId}_${secret}`,
        `${prefix}_${tag}_ffffffffffffffff_${secret}`,
        `${prefix}_${tag}_${keyId}_${"0".repeat(secret.length)}`,
        f.revoked,
      ];
      for (const key of bad) {
        const r = await c.call(RECALL, request, key);
        expect(r.code, `key ${String(key).slice(0, 12)}`).toBe("unauthenticated");
        expect(r.message).not.toContain(secret);
      }
    },
  ],
  [
    "user routes: admin-only, a user may inspect itself, secrets never shown",
    async (c, f) => {
      const denied = await c.call("engram.v2.AuthService/CreateUser", { username: `${f.scope}-x` }, f.alice);
      expect(denied.code).toBe("permission_denied");
      const list = await c.call("engram.v2.AuthService/ListUsers", {}, f.bob);
      expect(list.code).toBe("permission_denied");
      const other = await c.call("engram.v2.AuthService/GetUser", { username: "bob" }, f.alice);
      expect(other.code).toBe("permission_denied");
      const self = await c.call("engram.v2.AuthService/GetUser", { username: "alice" }, f.alice);
      expect(self.code).toBe("ok");
      const user = self.body["user"] as JsonObject;
      expect(user["username"]).toBe("alice");
      expect(user["role"]).toBe("user");
      expect(user["api_key_active"]).toBe(true);
      expect(JSON.stringify(self.body)).not.toContain(f.alice.split("_")[3]);
      const missing = await c.call("engram.v2.AuthService/GetUser", { username: "nobody" }, f.admin);
      expect(missing.code).toBe("not_found");
    },
  ],
  [
    "user lifecycle: create returns a working key once, rotate replaces it, revoke disables it",
    async (c, f) => {
      const username = `${f.scope}-carol`;
      const created = await c.call("engram.v2.AuthService/CreateUser", { username }, f.admin);
      expect(created.code).toBe("ok");
      const key = String(created.body["api_key"]);
      expect(key).toMatch(/^mem_local_[0-9a-f]+_[0-9a-f]+$/);
      expect((await c.call(RECALL, { session_id: "s", query: "q" }, key)).code).toBe("ok");
      const again = await c.call("engram.v2.AuthService/CreateUser", { username }, f.admin);
      expect(again.code).toBe("already_exists");
      const listed = await c.call("engram.v2.AuthService/ListUsers", {}, f.admin);
      expect(JSON.stringify(listed.body)).not.toContain(key.split("_")[3]);
      expect((listed.body["users"] as JsonObject[]).some((u) => u["username"] === username)).toBe(true);
      const rotated = await c.call("engram.v2.AuthService/RotateUserApiKey", { username }, f.admin);
      expect(rotated.code).toBe("ok");
      const newKey = String(rotated.body["api_key"]);
      expect(newKey).not.toBe(key);
      expect((await c.call(RECALL, { session_id: "s", query: "q" }, key)).code).toBe("unauthenticated");
      expect((await c.call(RECALL, { session_id: "s", query: "q" }, newKey)).code).toBe("ok");
      const revoked = await c.call("engram.v2.AuthService/RevokeUserApiKey", { username }, f.admin);
      expect(revoked.code).toBe("ok");
      expect(revoked.body["success"]).toBe(true);
      expect((await c.call(RECALL, { session_id: "s", query: "q" }, newKey)).code).toBe("unauthenticated");
    },
  ],
  [
    "health probes answer without a key",
    async (c) => {
      const ready = await c.call("engram.v2.HealthService/Readyz", {});
      expect(ready.code).toBe("ok");
      expect(ready.body["status"]).toBe("ready");
    },
  ],
  [
    "the removed SDM routes refuse",
    async (c, f) => {
      const r = await c.call("engram.v2.CoreService/SdmWrite", {}, f.alice);
      expect(r.code).toBe("unimplemented");
      expect(r.message).toContain("removed");
      if (c.transport === "rest") expect(r.status).toBe(410);
    },
  ],
];

describe.each(TRANSPORTS)("over %s", (transport) => {
  let fixture: Fixture;
  let caller: Caller;

  beforeAll(async () => {
    const server = await startTestServer();
    const alice = await createUser(server.baseUrl, server.adminKey, "alice");
    const bob = await createUser(server.baseUrl, server.adminKey, "bob");
    const revoked = await createUser(server.baseUrl, server.adminKey, "revoked-user");
    const revoke = await fetch(`${server.baseUrl}/v2/core/auth/users/revoked-user/revoke_key`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}` },
    });
    expect(revoke.status).toBe(200);
    fixture = { server, admin: server.adminKey, alice, bob, revoked, scope: transport };
    caller = callerFor(transport, server.baseUrl, server.port);
  });

  afterAll(async () => {
    caller.close();
    await fixture.server.close();
  });

  it.each(CASES)("%s", async (_name, run) => {
    await run(caller, fixture);
  });
});
