// The public @mubit-ai/sdk's core calls work against Engram over HTTP: ACL grant, check and revoke naming a run by
// one of its nodes (`node_id`), and session commit and snapshot sending `session_id` beside the `{id}` path parameter.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { CORE_ENV } from "./harness/core.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

type SdkClient = InstanceType<typeof Client>;
type Json = Record<string, unknown>;

let server: TestServer;
let alice: SdkClient;
let bob: SdkClient;
let bobKey: string;

const sdk = (key: string): SdkClient => new Client({ transport: "http", endpoint: server.baseUrl, api_key: key });

/** The SDK's error for a failed call, so its message (the server's JSON error body) can be checked. */
async function failure(call: Promise<unknown>): Promise<Error> {
  const outcome = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(outcome, "expected the call to fail").toBeInstanceOf(Error);
  return outcome as Error;
}

async function getNode(key: string, id: string): Promise<number> {
  const response = await fetch(`${server.baseUrl}/v2/core/node/${id}`, { headers: { authorization: `Bearer ${key}` } });
  await response.arrayBuffer();
  return response.status;
}

beforeAll(async () => {
  server = await startTestServer(CORE_ENV);
  alice = sdk(await createUser(server.baseUrl, server.adminKey, "alice"));
  bobKey = await createUser(server.baseUrl, server.adminKey, "bob");
  bob = sdk(bobKey);
});
afterAll(async () => server.close());

describe("ACL with node_id", () => {
  it("grant, check and revoke name the run that holds the node", async () => {
    const { node_id: nodeId } = (await alice.core.insert({ run_id: "sdk-acl", text: "shared design notes" })) as { node_id: string };
    expect(await getNode(bobKey, nodeId)).toBe(404);

    const granted = (await alice.core.grantPermission({ node_id: nodeId, principal_type: "user", principal_id: "bob", permission: "read" })) as Json;
    expect(granted).toMatchObject({ success: true });
    expect(String(granted["message"])).toContain('run "sdk-acl"');
    expect(await getNode(bobKey, nodeId)).toBe(200);
    // The grant is on the run: a node added to it later is readable too.
    const { node_id: later } = (await alice.core.insert({ run_id: "sdk-acl", text: "more notes" })) as { node_id: string };
    expect(await getNode(bobKey, later)).toBe(200);

    const checked = (await alice.core.checkPermission({ node_id: nodeId, principal_type: "user", principal_id: "bob", permission: "read" })) as Json;
    expect(checked).toEqual({ allowed: true, reason: "run_grant" });
    const checkedWrite = (await alice.core.checkPermission({ node_id: nodeId, principal_type: "user", principal_id: "bob", permission: "write" })) as Json;
    expect(checkedWrite).toEqual({ allowed: false, reason: "none" });
    // run_id and node_id together must agree.
    const same = (await alice.core.checkPermission({ node_id: nodeId, run_id: "sdk-acl", principal_type: "user", principal_id: "bob", permission: "read" })) as Json;
    expect(same["allowed"]).toBe(true);

    // A grantee who can read the node still cannot manage the owner's permissions.
    const foreign = await failure(bob.core.grantPermission({ node_id: nodeId, principal_type: "user", principal_id: "bob", permission: "write" }));
    expect(foreign.message).toContain("permission_denied");

    const revoked = (await alice.core.revokePermission({ node_id: nodeId, principal_type: "user", principal_id: "bob" })) as Json;
    expect(revoked).toMatchObject({ success: true });
    expect(await getNode(bobKey, nodeId)).toBe(404);
    const after = (await alice.core.checkPermission({ node_id: nodeId, principal_type: "user", principal_id: "bob", permission: "read" })) as Json;
    expect(after).toEqual({ allowed: false, reason: "none" });
  });

  it("refuses a node_id in another run than run_id, an unknown node, and another user's unreadable node", async () => {
    const { node_id: nodeId } = (await alice.core.insert({ run_id: "sdk-acl-2", text: "private" })) as { node_id: string };
    const mismatch = await failure(alice.core.grantPermission({ node_id: nodeId, run_id: "elsewhere", principal_type: "user", principal_id: "bob", permission: "read" }));
    expect(mismatch.message).toContain("invalid_argument");
    expect(mismatch.message).toContain("node_id");
    const unknown = await failure(alice.core.checkPermission({ node_id: "987654321", principal_type: "user", principal_id: "bob", permission: "read" }));
    expect(unknown.message).toContain("not_found");
    // Bob cannot read alice's node: it answers as missing, not as forbidden.
    const hidden = await failure(bob.core.revokePermission({ node_id: nodeId, principal_type: "user", principal_id: "bob" }));
    expect(hidden.message).toContain("not_found");
    const neither = await failure(alice.core.grantPermission({ principal_type: "user", principal_id: "bob", permission: "read" }));
    expect(neither.message).toContain("run_id");
  });
});

describe("core sessions with session_id in the body", () => {
  it("snapshot and commit accept session_id equal to the path id", async () => {
    const { session_id: sessionId } = (await alice.core.createSession({})) as { session_id: string };
    const { node_id: nodeId } = (await alice.core.insert({ run_id: "sdk-txn", text: "staged", session_id: sessionId })) as { node_id: string };
    const snapshot = (await alice.core.snapshotSession({ id: sessionId, session_id: sessionId, path: "sdk-snap" })) as Json;
    expect(snapshot).toMatchObject({ success: true, path: "sdk-snap", write_count: 1 });
    expect(await getNode(await createUser(server.baseUrl, server.adminKey, "carol"), nodeId)).toBe(404);
    const committed = (await alice.core.commitSession({ id: sessionId, session_id: sessionId })) as Json;
    expect(committed).toMatchObject({ success: true, applied_writes: 1 });
  });

  it("refuses a session_id that differs from the path id, naming session_id, and changes nothing", async () => {
    const { session_id: sessionId } = (await alice.core.createSession({})) as { session_id: string };
    await alice.core.insert({ run_id: "sdk-txn", text: "staged again", session_id: sessionId });
    for (const call of [
      alice.core.commitSession({ id: sessionId, session_id: "some-other-session" }),
      alice.core.snapshotSession({ id: sessionId, session_id: "some-other-session", path: "never" }),
    ]) {
      const error = await failure(call);
      expect(error.message).toContain("invalid_argument");
      expect(error.message).toContain("session_id");
    }
    // The session is still open with its write.
    expect(await alice.core.commitSession({ id: sessionId })).toMatchObject({ success: true, applied_writes: 1 });
  });

  it("over an RPC protocol session_id alone names the session", async () => {
    const daveKey = await createUser(server.baseUrl, server.adminKey, "dave");
    const dave = sdk(daveKey);
    const { session_id: sessionId } = (await dave.core.createSession({})) as { session_id: string };
    await dave.core.insert({ run_id: "sdk-txn", text: "via connect", session_id: sessionId });
    const connect = async (method: string, body: Json): Promise<{ status: number; body: Json }> => {
      const response = await fetch(`${server.baseUrl}/engram.v2.CoreService/${method}`, {
        method: "POST",
        headers: { authorization: `Bearer ${daveKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Json };
    };
    expect(await connect("SnapshotCoreSession", { sessionId, path: "via-connect" })).toMatchObject({ status: 200, body: { success: true, path: "via-connect" } });
    expect(await connect("CommitCoreSession", { sessionId })).toMatchObject({ status: 200, body: { success: true, applied_writes: 1 } });
    const neither = await connect("CommitCoreSession", {});
    expect(neither.status).toBe(400);
    expect(String(neither.body["message"])).toContain("session_id");
  });
});
