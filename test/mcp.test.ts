// The MCP server with the SDK's own client: Streamable HTTP at /mcp on the main port and stdio through `engram mcp`
// (over both client transports), against a real server: tools, resources, errors, authentication and isolation.
import { spawn } from "node:child_process";
import http2 from "node:http2";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, freePort } from "./harness/child-server.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const TOOL_NAMES = [
  "remember",
  "recall",
  "context",
  "archive",
  "dereference",
  "forget",
  "reflect",
  "record_outcome",
  "record_step_outcome",
  "list_lessons",
  "diagnose",
  "handoff",
];
const MAX_REQUEST_BYTES = 256 * 1024;
const CLI = path.resolve("dist/src/cli/main.js");

let server: TestServer;
let alice: string;
let bob: string;
const clients: Client[] = [];

beforeAll(async () => {
  ensureBuilt();
  server = await startTestServer({ SERVICE_MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES) });
  alice = await createUser(server.baseUrl, server.adminKey, "mcp-alice");
  bob = await createUser(server.baseUrl, server.adminKey, "mcp-bob");
});

afterAll(async () => {
  for (const client of clients) await client.close();
  await server?.close();
});

async function connected(client: Client, transport: Parameters<Client["connect"]>[0]): Promise<Client> {
  await client.connect(transport);
  clients.push(client);
  return client;
}

function newClient(): Client {
  return new Client({ name: "engram-mcp-test", version: "1.0.0" });
}

async function httpClient(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  return connected(newClient(), transport);
}

async function stdioClient(key: string, clientTransport: "http" | "grpc", endpoint = server.baseUrl): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, "mcp"],
    env: { SERVICE_ENDPOINT: endpoint, SERVICE_API_KEY: key, SERVICE_TRANSPORT: clientTransport },
    stderr: "pipe",
  });
  return connected(newClient(), transport);
}

type Json = Record<string, unknown>;

async function call(client: Client, name: string, args: Json): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The result of a successful call: its structured content, which the text content repeats as JSON. */
async function ok(client: Client, name: string, args: Json): Promise<Json> {
  const result = await call(client, name, args);
  const [first] = result.content;
  if (result.isError === true) throw new Error(`${name} failed: ${first?.type === "text" ? first.text : "?"}`);
  expect(first?.type).toBe("text");
  expect(JSON.parse(first?.type === "text" ? first.text : "")).toEqual(result.structuredContent);
  return result.structuredContent as Json;
}

/** The text of a tool error. */
async function toolError(client: Client, name: string, args: Json): Promise<string> {
  const result = await call(client, name, args);
  expect(result.isError).toBe(true);
  const [first] = result.content;
  return first?.type === "text" ? first.text : "";
}

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  try {
    await promise;
  } catch (e: unknown) {
    if (e instanceof McpError) return e;
    throw e;
  }
  throw new Error("expected the request to fail");
}

async function readJson(client: Client, uri: string): Promise<Json> {
  const { contents } = await client.readResource({ uri });
  expect(contents).toHaveLength(1);
  const [content] = contents;
  expect(content?.uri).toBe(uri);
  expect(content?.mimeType).toBe("application/json");
  return JSON.parse(content !== undefined && "text" in content ? content.text : "") as Json;
}

const CONNECTIONS = [
  { label: "streamable http", connect: (key: string) => httpClient(key) },
  { label: "stdio (client over http)", connect: (key: string) => stdioClient(key, "http") },
  { label: "stdio (client over grpc)", connect: (key: string) => stdioClient(key, "grpc") },
];

describe.each(CONNECTIONS)("over $label", ({ label, connect }) => {
  const run = `mcp-run-${label.replace(/\W+/g, "-")}`;
  let client: Client;

  beforeAll(async () => {
    // A user of its own, so lessons learned over another connection are not merged into this one's.
    client = await connect(await createUser(server.baseUrl, server.adminKey, `mcp-${label.replace(/\W+/g, "-")}`));
  });

  it("lists the twelve tools with descriptions, JSON schemas from the protos and read-only and destructive hints", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...TOOL_NAMES].sort());
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe("object");
      expect(Object.keys(tool.inputSchema.properties ?? {}).length).toBeGreaterThan(0);
      expect(tool.outputSchema?.type).toBe("object");
    }
    const remember = tools.find((t) => t.name === "remember");
    expect(Object.keys(remember?.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["session_id", "content", "intent"]));
    expect(remember?.annotations?.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === "recall")?.annotations?.readOnlyHint).toBe(true);
    expect(remember?.annotations?.destructiveHint).toBe(false);
    const forget = tools.find((t) => t.name === "forget");
    expect(forget?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(Object.keys(forget?.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["query", "run_ids", "entry_types", "dry_run", "preview_token"]));
  });

  it("remembers, then recalls and assembles context from what it remembered", async () => {
    const written = await ok(client, "remember", { session_id: run, content: "The deploy script lives in scripts/deploy-prod.sh", agent_id: "planner" });
    expect(written["success"]).toBe(true);
    expect(written["entry_id"]).toMatch(/\S/);
    // lowerCamel names are accepted as well as proto names.
    const answer = await ok(client, "recall", { sessionId: run, query: "where does the deploy script live" });
    const evidence = answer["evidence"] as Json[];
    expect(evidence[0]?.["id"]).toBe(written["entry_id"]);
    expect(evidence[0]?.["content"]).toBe("The deploy script lives in scripts/deploy-prod.sh");
    const context = await ok(client, "context", { run_id: run, query: "deploy script", max_token_budget: 500 });
    expect(context["context_block"]).toContain("scripts/deploy-prod.sh");
    expect(context["token_estimate"]).toBeGreaterThan(0);
  });

  it("archives an exact block and dereferences it byte for byte", async () => {
    const content = "exact\n  block\twith  spacing  \n";
    const archived = await ok(client, "archive", { run_id: run, content, artifact_kind: "log" });
    expect(archived["reference_id"]).toMatch(/\S/);
    const fetched = await ok(client, "dereference", { reference_id: archived["reference_id"] });
    expect(fetched["found"]).toBe(true);
    expect(fetched["content"]).toBe(content);
  });

  it("reflects caller lessons, lists them, reinforces them, diagnoses from them and hands off", async () => {
    const reflected = await ok(client, "reflect", {
      run_id: run,
      lessons: [
        { content: "Run the linter before committing changes to the repository", lesson_type: "success" },
        { content: "When npm install fails with EACCES permission denied, set a user-level npm prefix", lesson_type: "failure" },
      ],
    });
    const decisions = reflected["decisions"] as Json[];
    expect(decisions.map((d) => d["decision"])).toEqual(["accepted", "accepted"]);
    const lessonId = decisions[0]?.["lesson_id"];
    expect(lessonId).toMatch(/\S/);

    const listed = await ok(client, "list_lessons", { run_id: run });
    const lessons = listed["lessons"] as Json[];
    expect(lessons.map((l) => l["id"])).toContain(lessonId);
    expect(lessons.find((l) => l["id"] === lessonId)?.["auto_extracted"]).toBe(false);

    const outcome = await ok(client, "record_outcome", { run_id: run, reference_id: lessonId, outcome: "success", rationale: "lint caught a bug" });
    expect(outcome["success"]).toBe(true);
    expect(outcome["reinforcement_count"]).toBe(1);
    const step = await ok(client, "record_step_outcome", { run_id: run, step_id: "step-1", outcome: "failure", directive_hint: "check permissions first" });
    expect(step["accepted"]).toBe(true);
    expect(step["step_outcome_id"]).toMatch(/\S/);

    const diagnosis = await ok(client, "diagnose", { run_id: run, error_text: "npm install failed: EACCES permission denied" });
    expect((diagnosis["failure_lessons"] as Json[]).map((l) => l["id"])).toContain(decisions[1]?.["lesson_id"]);

    const handoff = await ok(client, "handoff", { run_id: run, task_id: "t-1", from_agent_id: "planner", to_agent_id: "coder", content: "Fix the deploy script" });
    expect(handoff["status"]).toBe("pending");
    const forCoder = await ok(client, "context", { run_id: run, agent_id: "coder" });
    expect((forCoder["pending_handoffs"] as Json[]).map((h) => h["handoff_id"])).toContain(handoff["handoff_id"]);
  });

  it("forgets a subject in two calls: a preview that erases nothing, then exactly what it listed", async () => {
    const forgetRun = `${run}-forget`;
    const janes = [
      (await ok(client, "remember", { session_id: forgetRun, content: "Jane Roe prefers invoices by post." }))["entry_id"],
      (await ok(client, "remember", { session_id: forgetRun, content: "Call Jane Roe after the quarterly audit." }))["entry_id"],
    ];
    const kept = (await ok(client, "remember", { session_id: forgetRun, content: "Invoices go out on the first of the month." }))["entry_id"];
    const recalled = async (): Promise<unknown[]> => ((await ok(client, "recall", { session_id: forgetRun, query: "Jane Roe invoices audit", limit: 10 }))["evidence"] as Json[]).map((e) => e["id"]);

    const preview = await ok(client, "forget", { query: "Jane Roe", run_ids: [forgetRun] });
    expect(preview).toMatchObject({ dry_run: true, matched: 2 });
    expect((preview["sample"] as Json[]).map((m) => m["id"]).sort()).toEqual([...janes].sort());
    expect(preview["preview_token"]).toMatch(/\S/);
    // A preview erases nothing.
    expect(await recalled()).toEqual(expect.arrayContaining([...janes, kept]));

    expect(await toolError(client, "forget", { query: "Jane Roe", run_ids: [forgetRun], dry_run: false })).toMatch(/^invalid_argument: .*preview_token/);
    const erased = await ok(client, "forget", { query: "Jane Roe", run_ids: [forgetRun], dry_run: false, preview_token: preview["preview_token"] });
    expect(erased).toMatchObject({ dry_run: false, matched: 2, erased: { entries: 2, fact: 2 } });
    expect(erased["receipt_id"]).toMatch(/^fgt_/);
    expect(await recalled()).toEqual([kept]);
    // The token named what is gone now: refused, nothing more erased.
    expect(await toolError(client, "forget", { query: "Jane Roe", run_ids: [forgetRun], dry_run: false, preview_token: preview["preview_token"] })).toMatch(/^aborted: /);
    expect(await recalled()).toEqual([kept]);
  });

  it("lists the run's resources and reads its lessons and recent activity", async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual(["engram://runs/{run_id}/activity", "engram://runs/{run_id}/lessons"]);
    const { resources } = await client.listResources();
    const lessonsUri = `engram://runs/${run}/lessons`;
    const activityUri = `engram://runs/${run}/activity`;
    expect(resources.map((r) => r.uri)).toEqual(expect.arrayContaining([lessonsUri, activityUri]));

    const lessons = (await readJson(client, lessonsUri))["lessons"] as Json[];
    expect(lessons.map((l) => l["content"])).toContain("Run the linter before committing changes to the repository");
    const activity = (await readJson(client, activityUri))["entries"] as Json[];
    expect(activity.map((e) => e["content"])).toContain("The deploy script lives in scripts/deploy-prod.sh");
  });

  it("answers bad arguments as tool errors with the service's message, and unknown names as protocol errors", async () => {
    expect(await toolError(client, "remember", { session_id: run, content: "" })).toMatch(/^invalid_argument: .*content/);
    expect(await toolError(client, "remember", { session_id: run, content: "x", colour: "red" })).toMatch(/^invalid_argument: .*colour/);
    expect(await toolError(client, "recall", { session_id: run, query: "q", limit: "many" })).toMatch(/^invalid_argument: .*limit/);
    expect(await toolError(client, "reflect", { run_id: run, lessons: [{ content: "x", lesson_type: "bogus" }] })).toMatch(
      /^invalid_argument: .*lessons\[0\]\.lesson_type/,
    );
    const unknownTool = await rejection(client.callTool({ name: "forget_everything", arguments: {} }));
    expect(unknownTool.code).toBe(ErrorCode.InvalidParams);
    expect(unknownTool.message).toContain("forget_everything");
    const unknownResource = await rejection(client.readResource({ uri: "engram://nothing/here" }));
    expect(unknownResource.code).toBe(-32002);
    // The session survives its errors.
    expect((await ok(client, "list_lessons", { run_id: run }))["lessons"]).not.toHaveLength(0);
  });
});

describe("isolation", () => {
  it("shows another user's run exactly as a run that does not exist", async () => {
    const owner = await httpClient(alice);
    const other = await stdioClient(bob, "http");
    const run = "mcp-isolated-run";
    await ok(owner, "remember", { session_id: run, content: "alice's private note about the launch code" });
    const archived = await ok(owner, "archive", { run_id: run, content: "alice's private block" });
    await ok(owner, "reflect", { run_id: run, lessons: [{ content: "Alice's private lesson about launches" }] });

    for (const kind of ["lessons", "activity"]) {
      const theirs = await readJson(other, `engram://runs/${run}/${kind}`);
      const none = await readJson(other, `engram://runs/no-such-run/${kind}`);
      expect(theirs).toEqual(none);
    }
    const deref = await ok(other, "dereference", { reference_id: archived["reference_id"] });
    expect(deref).toEqual(await ok(other, "dereference", { reference_id: "no-such-reference" }));
    expect(deref["found"]).toBe(false);
    const recalled = await ok(other, "recall", { session_id: run, query: "private note launch code" });
    expect(recalled["evidence"]).toEqual([]);
    expect((await ok(other, "list_lessons", { run_id: run }))["lessons"]).toEqual([]);
    // Forget reads only the caller's own entries: nothing of alice's matches for bob.
    expect(await ok(other, "forget", { query: "private note launch code" })).toMatchObject({ matched: 0, sample: [] });
    expect((await other.listResources()).resources.map((r) => r.uri)).not.toContain(`engram://runs/${run}/lessons`);
  });
});

describe("Streamable HTTP at /mcp", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };

  async function post(body: string, authorization?: string): Promise<Response> {
    return fetch(`${server.baseUrl}/mcp`, {
      method: "POST",
      headers: authorization === undefined ? mcpHeaders : { ...mcpHeaders, authorization },
      body,
    });
  }

  it("answers 401 with WWW-Authenticate and a JSON-RPC error without a valid Bearer key", async () => {
    for (const authorization of [undefined, "Bearer mem_local_nosuchkey_0123456789abcdef0123", "Basic abc"]) {
      const response = await post(JSON.stringify(initialize), authorization);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
      const body = (await response.json()) as { jsonrpc: string; error: { message: string } };
      expect(body.jsonrpc).toBe("2.0");
      expect(body.error.message).toMatch(/API key/);
    }
  });

  it("refuses the SDK client without a key", async () => {
    const client = newClient();
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`)))).rejects.toThrow(/401|Unauthorized/);
  });

  it("takes POST only, bounds the body and answers malformed JSON as a JSON-RPC parse error", async () => {
    const get = await fetch(`${server.baseUrl}/mcp`, { headers: { authorization: `Bearer ${alice}`, accept: "text/event-stream" } });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const big = await post(JSON.stringify({ ...initialize, padding: "x".repeat(MAX_REQUEST_BYTES) }), `Bearer ${alice}`);
    expect(big.status).toBe(413);
    const malformed = await post("{not json", `Bearer ${alice}`);
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const deep = await post(`${"[".repeat(100)}${"]".repeat(100)}`, `Bearer ${alice}`);
    expect(deep.status).toBe(400);
  });

  it("serves an initialize request over cleartext HTTP/2 on the same port", async () => {
    const session = http2.connect(server.baseUrl);
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({ ":method": "POST", ":path": "/mcp", ...mcpHeaders, authorization: `Bearer ${alice}` });
        let status = 0;
        let body = "";
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        stream.on("data", (chunk: Buffer) => (body += chunk.toString()));
        stream.on("end", () => resolve({ status, body }));
        stream.on("error", reject);
        stream.end(JSON.stringify(initialize));
      });
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.body) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe("engram");
    } finally {
      session.close();
    }
  });
});

describe("engram mcp on stdio", () => {
  it("writes only protocol messages to stdout and exits 0 when the client closes stdin", async () => {
    const child = spawn(process.execPath, [CLI, "mcp"], {
      env: { PATH: process.env["PATH"] ?? "", SERVICE_ENDPOINT: server.baseUrl, SERVICE_API_KEY: alice },
      stdio: ["pipe", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let out = "";
    const answered = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        // Two requests, two answers; the notification gets none.
        if (out.split("\n").length > 2) resolve();
      });
    });
    const messages = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "remember", arguments: { session_id: "stdio-raw", content: "raw stdio works" } } },
    ];
    for (const message of messages) child.stdin.write(`${JSON.stringify(message)}\n`);
    await answered;
    child.stdin.end();
    expect(await exited).toBe(0);
    const lines = out.trimEnd().split("\n").map((line) => JSON.parse(line) as { jsonrpc: string; id: number; result: Json });
    expect(lines.map((l) => [l.jsonrpc, l.id])).toEqual([["2.0", 1], ["2.0", 2]]);
    expect((lines[1]?.result["structuredContent"] as Json)["success"]).toBe(true);
  });

  it("answers tool errors, not a crash, when the Engram server cannot be reached", async () => {
    const client = await stdioClient(alice, "http", `http://127.0.0.1:${await freePort()}`);
    expect(await toolError(client, "recall", { session_id: "s", query: "anything" })).toMatch(/^unavailable: /);
    expect(await toolError(client, "list_lessons", {})).toMatch(/^unavailable: /);
  });
});
