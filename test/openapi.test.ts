// The OpenAPI document at /openapi.json: valid OpenAPI 3.1, complete against the spec's routes, described from the
// proto comments, and true to what the server sends: a walk over the live routes checks every answer against it.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ENGRAM_ROUTES, SPEC_ROUTES } from "./harness/spec-routes.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { createLogger } from "../src/platform/logger.js";
import { ENGRAM_SERVICES } from "../src/client/services.js";
import { PLANNED_SERVICES } from "../src/services/planned.js";
import { OPENAPI_PATH, openApiMount } from "../src/openapi/openapi-mount.js";
import { builtDocumentPath, packageRoot } from "../src/platform/build-output.js";
import { documentFromImage, packageVersion, writeDocumentFromImage } from "../src/openapi/document-source.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const ROOT = packageRoot();

/**
 * `make build` writes dist/openapi.json. When it is missing or differs from what the build would write from today's
 * protos and code, the test writes it the way the build does (a `buf build` image with source info, then the same
 * generator), so that the server under test serves the build's document.
 */
function ensureBuiltDocument(): void {
  const file = builtDocumentPath(ROOT);
  const image = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "engram-openapi-")), "image.binpb");
  execFileSync(path.join(ROOT, "node_modules/.bin/buf"), ["build", "-o", image], { cwd: ROOT });
  const current = JSON.stringify(documentFromImage(fs.readFileSync(image), packageVersion(ROOT)));
  if (!fs.existsSync(file) || fs.readFileSync(file, "utf8") !== current) writeDocumentFromImage(image, file);
  fs.rmSync(path.dirname(image), { recursive: true, force: true });
}

let server: TestServer;
let userKey: string;
let doc: JsonObject;
let ajv: Ajv2020;

beforeAll(async () => {
  ensureBuiltDocument();
  // Every policy gate open, so that each route's own validation is what answers.
  server = await startTestServer({
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true",
  });
  userKey = await createUser(server.baseUrl, server.adminKey, "walker");
  const response = await fetch(`${server.baseUrl}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  doc = (await response.json()) as JsonObject;
  // Formats the document uses beyond JSON Schema's own; their patterns and ranges carry the checks.
  const formats = { int32: true, uint32: true, int64: true, uint64: true, float: true, double: true, byte: true, "date-time": true } as const;
  ajv = new Ajv2020({ strict: true, formats });
  for (const keyword of ["openapi", "info", "tags", "security", "paths", "components"]) ajv.addKeyword(keyword);
  ajv.addSchema({ ...doc, $id: DOC_ID });
});
afterAll(async () => server.close());

const DOC_ID = "urn:engram:openapi";

function object(value: Json | undefined, what: string): JsonObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error(`${what} is not an object`);
  return value;
}

function operationOf(template: string, verb: string): JsonObject {
  return object(object(object(doc["paths"], "paths")[template], template)[verb.toLowerCase()], `${verb} ${template}`);
}

const pointerPart = (s: string): string => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** The JSON pointer of the documented schema for this status and media type, or undefined if it is not documented. */
function responseSchemaPointer(template: string, verb: string, status: number, mediaType: string): string | undefined {
  const responses = object(operationOf(template, verb)["responses"], "responses");
  const key = [String(status), `${String(status)[0]}XX`, "default"].find((k) => k in responses);
  if (key === undefined) return undefined;
  let base = `#/paths/${pointerPart(template)}/${verb.toLowerCase()}/responses/${key}`;
  let response = object(responses[key], "response");
  if (typeof response["$ref"] === "string") {
    base = response["$ref"];
    response = object(object(object(doc["components"], "components")["responses"], "responses")[base.split("/").pop() ?? ""], base);
  }
  if (!(mediaType in object(response["content"], "content"))) return undefined;
  return `${base}/content/${pointerPart(mediaType)}/schema`;
}

const validators = new Map<string, ValidateFunction>();
function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `${DOC_ID}${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

interface Checked {
  readonly status: number;
  readonly json: JsonObject;
}

/** Calls a route and checks its answer against the document: the status is listed, the body fits its schema. */
async function check(verb: string, template: string, options: { params?: Record<string, string>; query?: string; body?: JsonObject; key?: string | null } = {}): Promise<Checked> {
  const urlPath = template.replace(/\{([a-z_]+)\}/g, (_m, name: string) => encodeURIComponent(options.params?.[name] ?? "x"));
  const key = options.key === undefined ? userKey : options.key;
  const response = await fetch(`${server.baseUrl}${urlPath}${options.query ?? ""}`, {
    method: verb,
    headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), "content-type": "application/json" },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const label = `${verb} ${urlPath} → ${response.status}`;
  const mediaType = (response.headers.get("content-type") ?? "").split(";")[0] ?? "";
  const pointer = responseSchemaPointer(template, verb, response.status, mediaType);
  const text = await response.text();
  expect(pointer, `${label} (${mediaType}) is not documented: ${text.slice(0, 300)}`).toBeDefined();
  const value = mediaType === "application/json" ? (JSON.parse(text) as Json) : text;
  const validate = validatorAt(pointer as string);
  expect(validate(value), `${label}: ${JSON.stringify(validate.errors)}\n${text.slice(0, 500)}`).toBe(true);
  if (response.status < 300) expectCostHeader(template, verb, label, response.headers.get("engram-cost"));
  return { status: response.status, json: typeof value === "object" && value !== null && !Array.isArray(value) ? value : {} };
}

/** A success carries the engram-cost header exactly when its route documents it, and in the documented form. */
function expectCostHeader(template: string, verb: string, label: string, value: string | null): void {
  const success = object(object(operationOf(template, verb)["responses"], "responses")["200"], `${label} 200`);
  const declared = (success["headers"] as JsonObject | undefined)?.["engram-cost"] !== undefined;
  expect(value !== null, `${label}: engram-cost ${value === null ? "missing" : "sent"} but ${declared ? "documented" : "not documented"}`).toBe(declared);
  if (value === null) return;
  const header = object(object(object(doc["components"], "components")["headers"], "headers")["EngramCost"], "EngramCost");
  expect(value, label).toMatch(new RegExp(String(object(header["schema"], "schema")["pattern"])));
}

/** As check, and the call must succeed. */
async function ok(verb: string, template: string, options: Parameters<typeof check>[2] = {}): Promise<JsonObject> {
  const result = await check(verb, template, options);
  expect(result.status, `${verb} ${template}: ${JSON.stringify(result.json).slice(0, 300)}`).toBeLessThan(300);
  return result.json;
}

describe("the document", () => {
  it("is valid OpenAPI 3.1 whose references all resolve", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.valid, String(JSON.stringify(result.errors)).slice(0, 2000)).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(() => validator.resolveRefs()).not.toThrow();
    expect(doc["openapi"]).toBe("3.1.0");
    // The validator does look inside: an operation whose response lacks its description fails.
    const broken = structuredClone(doc);
    object(object(broken["paths"], "paths")["/livez"], "/livez")["get"] = { responses: { "200": { content: {} } } };
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it("holds schemas that are valid JSON Schema 2020-12 and compile in strict mode", () => {
    // The OpenAPI meta-schema leaves Schema Objects to the JSON Schema dialect, so each is checked against it here.
    const schemas = object(object(doc["components"], "components")["schemas"], "schemas");
    expect(Object.keys(schemas).length).toBeGreaterThan(100);
    for (const name of Object.keys(schemas)) {
      expect(ajv.validateSchema(object(schemas[name], name)), `${name}: ${ajv.errorsText()}`).toBe(true);
      expect(() => validatorAt(`#/components/schemas/${pointerPart(name)}`), name).not.toThrow();
    }
    expect(ajv.validateSchema({ type: 5 })).toBe(false);
  });

  it("lists every route of the spec with its method", () => {
    const paths = object(doc["paths"], "paths");
    const missing = [...SPEC_ROUTES, ...ENGRAM_ROUTES]
      .map((r) => ({ verb: r.method.toLowerCase(), template: r.path.replace(/:([a-z_]+)/g, "{$1}") }))
      .filter(({ verb, template }) => paths[template] === undefined || object(paths[template], template)[verb] === undefined);
    expect(missing).toEqual([]);
    expect(operationOf("/openapi.json", "GET")["security"]).toEqual([]);
  });

  it("describes every route from its proto comment", () => {
    const undescribed: string[] = [];
    for (const [template, item] of Object.entries(object(doc["paths"], "paths"))) {
      for (const [verb, operation] of Object.entries(object(item, template))) {
        const op = object(operation, verb);
        if (typeof op["description"] !== "string" || typeof op["summary"] !== "string") undescribed.push(`${verb} ${template}`);
      }
    }
    expect(undescribed).toEqual([]);
    expect(operationOf("/v2/control/remember", "POST")["description"]).toMatch(/durable on\s+disk/);
    const schemas = object(object(doc["components"], "components")["schemas"], "schemas");
    const remember = object(schemas["engram.v2.RememberRequest"], "RememberRequest");
    expect(remember["description"]).toEqual(expect.any(String));
    expect(object(object(remember["properties"], "properties")["session_id"], "session_id")["description"]).toEqual(expect.any(String));
  });

  it("declares the bearer key scheme, public probes, and the one error body", () => {
    const components = object(doc["components"], "components");
    expect(object(components["securitySchemes"], "securitySchemes")["apiKey"]).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc["security"]).toEqual([{ apiKey: [] }]);
    for (const probe of ["/livez", "/readyz", "/metrics", "/v2/core/health"]) expect(operationOf(probe, "GET")["security"], probe).toEqual([]);
    expect(operationOf("/v2/control/remember", "POST")["security"]).toBeUndefined();
    expect(object(components["schemas"], "schemas")["Error"]).toMatchObject({ required: ["code", "message", "details"] });
    const responses = object(operationOf("/v2/control/remember", "POST")["responses"], "responses");
    expect(Object.keys(responses)).toEqual(["200", "400", "401", "403", "404", "409", "413", "429", "5XX"]);
    expect(responses["400"]).toEqual({ $ref: "#/components/responses/BadRequest" });
    expect(object(operationOf("/v2/control/events/subscribe", "GET")["responses"], "responses")["200"]).toMatchObject({ content: { "text/event-stream": {} } });
  });

  it("declares the engram-cost header on the answer of every authenticated unary route, and of no probe or stream", () => {
    const header = object(object(object(doc["components"], "components")["headers"], "headers")["EngramCost"], "EngramCost");
    expect(object(header["schema"], "schema")).toMatchObject({ type: "string" });
    expect(String(header["description"])).toContain("provider");
    const withCost: string[] = [];
    for (const [template, item] of Object.entries(object(doc["paths"], "paths"))) {
      for (const [verb, op] of Object.entries(object(item, template))) {
        const operation = object(op, `${verb} ${template}`);
        const success = (operation["responses"] as JsonObject)["200"] as JsonObject | undefined;
        if (success === undefined) continue;
        const label = `${verb.toUpperCase()} ${template}`;
        const declared = (success["headers"] as JsonObject | undefined)?.["engram-cost"];
        const isPublic = Array.isArray(operation["security"]) && operation["security"].length === 0;
        const isStream = "text/event-stream" in object(success["content"], label);
        if (isPublic || isStream) expect(declared, label).toBeUndefined();
        else {
          expect(declared, label).toEqual({ $ref: "#/components/headers/EngramCost" });
          withCost.push(label);
        }
      }
    }
    expect(withCost).toEqual(expect.arrayContaining(["POST /v2/control/query", "POST /v2/control/remember", "POST /v2/control/forget", "POST /v2/control/retention/set"]));
  });

  it("answers 405 to other methods, with the error body", async () => {
    const response = await fetch(`${server.baseUrl}/openapi.json`, { method: "POST", body: "{}" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    const validate = validatorAt("#/components/schemas/Error");
    expect(validate(await response.json())).toBe(true);
    const head = await fetch(`${server.baseUrl}/openapi.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });
});

/** Reads the first `data:` event of an SSE answer and checks it against the documented `x-sse-data` schema. */
async function firstEvent(verb: string, template: string, request: { query?: string; body?: JsonObject }): Promise<{ event: JsonObject; close: () => void }> {
  const abort = new AbortController();
  const response = await fetch(`${server.baseUrl}${template}${request.query ?? ""}`, {
    method: verb,
    headers: { authorization: `Bearer ${userKey}`, "content-type": "application/json" },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
    signal: abort.signal,
  });
  if (response.status !== 200) throw new Error(`${verb} ${template} → ${response.status}: ${await response.text()}`);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const pointer = responseSchemaPointer(template, verb, 200, "text/event-stream");
  expect(pointer).toBeDefined();
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const line = text.split("\n").find((l) => l.startsWith("data: "));
  expect(line, text).toBeDefined();
  const event = JSON.parse((line as string).slice("data: ".length)) as JsonObject;
  const validate = validatorAt(`${(pointer as string).replace(/\/schema$/, "")}/x-sse-data`);
  expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
  return { event, close: () => abort.abort() };
}

const str = (v: Json | undefined): string => (typeof v === "string" ? v : JSON.stringify(v));
const RUN = "walk";
/** Operations the walk below called, `VERB /template`. */
const called = new Set<string>();
async function call(verb: string, template: string, options: Parameters<typeof check>[2] = {}): Promise<JsonObject> {
  called.add(`${verb} ${template}`);
  return ok(verb, template, options);
}

/** The document without its prose, to compare documents built with and without proto comments. */
function withoutProse(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutProse);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "description" && k !== "summary").map(([k, v]) => [k, withoutProse(v)]));
}

describe("without a build", () => {
  it("serves the same routes and schemas built from gen/, without descriptions, and says why once", async () => {
    const lines: string[] = [];
    const logger = createLogger("info", { write: (line: string) => void lines.push(line) });
    const services = [...Object.values(ENGRAM_SERVICES), ...PLANNED_SERVICES];
    const mount = openApiMount(services, logger, path.join(os.tmpdir(), "no-such-dir", "openapi.json"));
    const plain = http.createServer((req, res) => mount.listener(req, res));
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = plain.address() as AddressInfo;
      const fallback = (await (await fetch(`http://127.0.0.1:${port}${OPENAPI_PATH}`)).json()) as JsonObject;
      expect(withoutProse(fallback)).toEqual(withoutProse(doc));
      expect(operationOf("/v2/control/remember", "POST")["description"]).toEqual(expect.any(String));
      expect(object(object(fallback["paths"], "paths")["/v2/control/remember"], "remember")["post"]).not.toHaveProperty("description");
      await fetch(`http://127.0.0.1:${port}${OPENAPI_PATH}`);
    } finally {
      await new Promise((resolve) => plain.close(resolve));
    }
    expect(lines.filter((l) => l.includes("without descriptions"))).toHaveLength(1);
  });
});

describe("the route walk: live answers match the document", () => {
  it("health probes, unauthenticated", async () => {
    for (const probe of ["/livez", "/readyz", "/v2/core/health", "/metrics"]) await call("GET", probe, { key: null });
  });

  it("auth", async () => {
    const admin = { key: server.adminKey };
    expect(str((await call("POST", "/v2/core/auth/users", { ...admin, body: { username: "walk-user", role: "user" } }))["api_key"])).not.toBe("");
    await call("GET", "/v2/core/auth/users", admin);
    await call("GET", "/v2/core/auth/users/{username}", { ...admin, params: { username: "walk-user" } });
    await call("POST", "/v2/core/auth/users/{username}/rotate_key", { ...admin, params: { username: "walk-user" }, body: {} });
    await call("POST", "/v2/core/auth/users/{username}/revoke_key", { ...admin, params: { username: "walk-user" }, body: {} });
  });

  it("memory", async () => {
    await call("POST", "/v2/control/remember", { body: { session_id: RUN, content: "The deploy uses blue-green switching.", intent: "fact" } });
    await call("POST", "/v2/control/recall", { body: { session_id: RUN, query: "how do we deploy" } });
    const job = await call("POST", "/v2/control/ingest", { body: { run_id: RUN, items: [{ text: "Rollbacks take five minutes." }] } });
    await call("GET", "/v2/control/ingest/jobs/{job_id}", { params: { job_id: str(job["job_id"]) }, query: `?run_id=${RUN}` });
    await call("POST", "/v2/control/ingest/stats", { body: { run_id: RUN } });
    await call("POST", "/v2/control/batch_insert", { body: { run_id: RUN, items: [{ text: "Staging mirrors production." }] } });
    await call("POST", "/v2/control/query", { body: { run_id: RUN, query: "deploy" } });
    await call("POST", "/v2/control/context", { body: { run_id: RUN, query: "deploy" } });
    await call("POST", "/v2/control/activities/append", { body: { run_id: RUN, activity: { type: "tool_call", tool_name: "shell", payload: "ls" } } });
    await call("POST", "/v2/control/activity", { body: { run_id: RUN } });
    await call("POST", "/v2/control/activity/export", { body: { run_id: RUN } });
    const archived = await call("POST", "/v2/control/archive", { body: { run_id: RUN, content: "runbook v2" } });
    await call("POST", "/v2/control/dereference", { body: { run_id: RUN, reference_id: str(archived["reference_id"]) } });
    await call("POST", "/v2/control/memory_health", { body: { run_id: RUN } });
    await call("POST", "/v2/control/checkpoint", { body: { run_id: RUN, label: "before deploy", context_snapshot: "all green" } });
  });

  it("core", async () => {
    const node = await call("POST", "/v2/core/insert", { body: { run_id: "walk-core", text: "a node about deploys" } });
    const id = str(node["node_id"]);
    await call("POST", "/v2/core/batch_insert", { body: { nodes: [{ run_id: "walk-core", text: "another node" }] } });
    await call("GET", "/v2/core/node/{id}", { params: { id } });
    await call("POST", "/v2/core/search", { body: { query_text: "deploys" } });
    await call("POST", "/v2/core/memory/{session_id}", { params: { session_id: "pad" }, body: { content: "scratch" } });
    await call("GET", "/v2/core/memory/{session_id}", { params: { session_id: "pad" } });
    await call("DELETE", "/v2/core/memory/{session_id}", { params: { session_id: "pad" } });
    const session = str((await call("POST", "/v2/core/session/create", { body: {} }))["session_id"]);
    await call("POST", "/v2/core/session/{id}/snapshot", { params: { id: session }, body: { path: "walk-snapshot" } });
    await call("POST", "/v2/core/session/{id}/commit", { params: { id: session }, body: {} });
    const dropped = str((await call("POST", "/v2/core/session/create", { body: {} }))["session_id"]);
    await call("DELETE", "/v2/core/session/{id}/drop", { params: { id: dropped } });
    await call("POST", "/v2/core/session/load", { body: { path: "walk-snapshot" } });
    await call("GET", "/v2/core/storage/stats", { key: server.adminKey });
    await call("POST", "/v2/core/storage/compact", { key: server.adminKey, body: {} });
    const grant = { principal_type: "user", principal_id: "walk-user", run_id: "walk-core", permission: "read" };
    await call("POST", "/v2/core/acl/grant", { body: grant });
    await call("POST", "/v2/core/acl/check", { body: grant });
    await call("POST", "/v2/core/acl/revoke", { body: grant });
    called.add("POST /v2/core/pubsub/subscribe");
    const stream = await firstEvent("POST", "/v2/core/pubsub/subscribe", { body: { filter_type: "all", run_id: "walk-core" } });
    await call("POST", "/v2/core/pubsub/list", { body: {} });
    await call("POST", "/v2/core/pubsub/unsubscribe", { body: { subscription_id: str(stream.event["subscription_id"]) } });
    stream.close();
    await call("DELETE", "/v2/core/node/{id}", { params: { id } });
    await call("DELETE", "/v2/core/runs/{run_id}", { params: { run_id: "walk-core" } });
    for (const removed of ["/v2/core/sdm/write", "/v2/core/sdm/read"]) {
      called.add(`POST ${removed}`);
      expect((await check("POST", removed, { body: {} })).status).toBe(410);
    }
  });

  it("events", async () => {
    called.add("GET /v2/control/events/subscribe");
    const stream = await firstEvent("GET", "/v2/control/events/subscribe", { query: `?run_id=${RUN}&event_types=lesson.*,entry.created` });
    stream.close();
    expect(stream.event["type"]).toBe("subscribed");
  });

  it("learning", async () => {
    const lesson = await call("POST", "/v2/control/remember", { body: { session_id: RUN, content: "Always run migrations before switching traffic.", intent: "lesson" } });
    const lessonId = str(lesson["entry_id"]);
    await call("POST", "/v2/control/diagnose", { body: { run_id: RUN, error_text: "migration timeout" } });
    await call("POST", "/v2/control/reflect", { body: { run_id: RUN } });
    await call("POST", "/v2/control/lessons", { body: { run_id: RUN } });
    await call("POST", "/v2/loop/lessons", { body: { run_id: RUN } });
    await call("GET", "/v2/loop/lessons", { query: `?run_id=${RUN}&limit=5` });
    await call("POST", "/v2/control/outcome", { body: { run_id: RUN, reference_id: lessonId, outcome: "success", signal: 0.5 } });
    await call("POST", "/v2/control/step_outcome", { body: { run_id: RUN, step_id: "s1", outcome: "success", signal: 0.5 } });
    await call("POST", "/v2/control/strategies", { body: { run_id: RUN } });
    await call("POST", "/v2/control/lessons/update", { body: { lesson_id: lessonId, confidence: 0.9 } });
    await call("POST", "/v2/control/lessons/delete", { body: { lesson_id: lessonId } });
  });

  it("coordination", async () => {
    await call("POST", "/v2/control/agents/register", { body: { run_id: RUN, agent_id: "planner", role: "planner" } });
    await call("POST", "/v2/control/agents/register", { body: { run_id: RUN, agent_id: "builder", role: "builder" } });
    await call("POST", "/v2/control/agents/heartbeat", { body: { run_id: RUN, agent_id: "planner" } });
    await call("POST", "/v2/control/agents", { body: { run_id: RUN } });
    const handoff = await call("POST", "/v2/control/handoff", { body: { run_id: RUN, task_id: "t1", from_agent_id: "planner", to_agent_id: "builder", content: "build it" } });
    await call("POST", "/v2/control/feedback", { body: { run_id: RUN, handoff_id: str(handoff["handoff_id"]), verdict: "approve", from_agent_id: "builder" } });
    await call("POST", "/v2/control/handoffs", { body: { run_id: RUN } });
  });

  it("planning", async () => {
    const goal = await call("POST", "/v2/control/goals/add", { body: { run_id: RUN, description: "ship the release" } });
    await call("POST", "/v2/control/goals/update", { body: { run_id: RUN, goal_id: str(goal["id"]), status: "achieved" } });
    await call("POST", "/v2/control/goals/list", { body: { run_id: RUN } });
    await call("POST", "/v2/control/goals/tree", { body: { run_id: RUN } });
    await call("POST", "/v2/control/variables/set", { body: { run_id: RUN, name: "attempts", value_json: "1" } });
    await call("POST", "/v2/control/variables/get", { body: { run_id: RUN, name: "attempts" } });
    await call("POST", "/v2/control/variables/list", { body: { run_id: RUN } });
    await call("POST", "/v2/control/variables/delete", { body: { run_id: RUN, name: "attempts" } });
    await call("POST", "/v2/control/concepts/define", { body: { run_id: RUN, name: "release", description: "a shipped build" } });
    await call("POST", "/v2/control/concepts/list", { body: { run_id: RUN } });
    await call("POST", "/v2/control/actions/submit", { body: { run_id: RUN, agent_id: "planner", action_type: "reason" } });
    await call("POST", "/v2/control/actions/log", { body: { run_id: RUN } });
    await call("POST", "/v2/control/cycles/run", { body: { run_id: RUN, agent_id: "planner", candidates: [{ action_type: "reason" }] } });
    await call("POST", "/v2/control/cycles/history", { body: { run_id: RUN } });
  });

  it("runs and control sessions", async () => {
    await call("POST", "/v2/control/remember", { body: { session_id: "walk-other", content: "other run" } });
    await call("GET", "/v2/control/runs", { query: "?limit=10" });
    await call("POST", "/v2/control/runs/link", { body: { run_id: RUN, linked_run_id: "walk-other" } });
    await call("POST", "/v2/control/runs/unlink", { body: { run_id: RUN, linked_run_id: "walk-other" } });
    await call("POST", "/v2/control/context/snapshot", { body: { run_id: RUN } });
    await call("POST", "/v2/control/delete_run", { body: { run_id: "walk-other" } });
    const session = await call("POST", "/v2/control/sessions/create", { body: { run_id: "walk-session", agent_id: "planner" } });
    const sessionId = str(object(session["session"], "session")["session_id"]);
    await call("POST", "/v2/control/sessions/get", { body: { session_id: sessionId } });
    await call("POST", "/v2/control/sessions/close", { body: { session_id: sessionId } });
  });

  it("resources", async () => {
    const created = await call("POST", "/v2/control/projects", { body: { name: "walk-project" } });
    const project = str(object(created["project"], "project")["project_id"]);
    await call("POST", "/v2/control/projects/list", { body: {} });
    await call("POST", "/v2/control/projects/get", { body: { project_id: project } });
    await call("POST", "/v2/control/projects/update", { body: { project_id: project, description: "walked" } });
    const agent = { project_id: project, agent_id: "writer" };
    await call("POST", "/v2/control/projects/agents", { body: { ...agent, role: "writer", system_prompt_content: "You write." } });
    await call("POST", "/v2/control/projects/agents/list", { body: { project_id: project } });
    await call("POST", "/v2/control/projects/agents/get", { body: agent });
    await call("POST", "/v2/control/projects/agents/update", { body: { ...agent, description: "writes docs" } });
    const version = await call("POST", "/v2/control/prompt/set", { body: { ...agent, content: "You write well." } });
    await call("POST", "/v2/control/prompt/get", { body: agent });
    const prompts = (await call("POST", "/v2/control/prompt/versions", { body: agent }))["versions"] as JsonObject[];
    await call("POST", "/v2/control/prompt/activate", { body: { ...agent, version_id: str(object(version["version"], "version")["version_id"]) } });
    const [a = "", b = ""] = prompts.map((v) => str(v["version_id"]));
    await call("POST", "/v2/control/prompt/diff", { body: { ...agent, version_a_id: a, version_b_id: b } });
    const skill = await call("POST", "/v2/control/skills", { body: { ...agent, name: "summarise", instructions: "Summarise the text." } });
    const skillId = str(object(skill["skill"], "skill")["skill_id"]);
    await call("POST", "/v2/control/skills/list", { body: { project_id: project } });
    await call("POST", "/v2/control/skills/get", { body: { project_id: project, skill_id: skillId } });
    await call("POST", "/v2/control/skills/update", { body: { project_id: project, skill_id: skillId, instructions: "Summarise briefly." } });
    const skills = (await call("POST", "/v2/control/skills/versions", { body: { skill_id: skillId } }))["versions"] as JsonObject[];
    const [first = "", second = ""] = skills.map((v) => str(v["version_id"]));
    await call("POST", "/v2/control/skills/activate", { body: { skill_id: skillId, version_id: first } });
    await call("POST", "/v2/control/skills/diff", { body: { skill_id: skillId, version_a_id: first, version_b_id: second } });
    await call("POST", "/v2/control/sessions/create", { body: { run_id: "walk-project-run", agent_id: "writer", project_id: project } });
    await call("POST", "/v2/control/projects/runs", { body: { project_id: project } });
    await call("POST", "/v2/control/projects/runs/get", { body: { project_id: project, run_id: "walk-project-run" } });
    await call("POST", "/v2/control/skills/delete", { body: { project_id: project, skill_id: skillId } });
    await call("POST", "/v2/control/projects/agents/delete", { body: agent });
    await call("POST", "/v2/control/projects/delete", { body: { project_id: project, force: true } });
  });

  it("tenant export and import", async () => {
    // Pages are cut by time as well as size: on a loaded machine the first may carry the header alone.
    const lines: string[] = [];
    let token = "";
    do {
      const page = await call("POST", "/v2/control/tenant/export", { body: { limit: 5, page_token: token } });
      lines.push(...(page["lines"] as string[]));
      token = String(page["next_page_token"]);
    } while (token !== "" && lines.length < 2);
    expect(lines.length).toBeGreaterThan(1);
    // The header line alone: a valid import that stores nothing.
    await call("POST", "/v2/control/tenant/import", { body: { lines: lines.slice(0, 1) } });
  });

  it("admin backup", async () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "engram-openapi-backup-"));
    await call("POST", "/v2/admin/backup", { key: server.adminKey, body: { directory } });
    fs.rmSync(directory, { recursive: true, force: true });
  });

  it("every other route: whatever it answers to a minimal request is documented", async () => {
    // Routes not walked above (or walked only on success) answer here with their own validation errors.
    for (const [template, item] of Object.entries(object(doc["paths"], "paths"))) {
      for (const verb of Object.keys(object(item, template))) {
        if (template === "/openapi.json" || template.endsWith("/subscribe")) continue;
        const upper = verb.toUpperCase();
        await check(upper, template, { body: upper === "GET" || upper === "DELETE" ? undefined : {} });
        await check(upper, template, { key: null, body: upper === "GET" || upper === "DELETE" ? undefined : {} });
      }
    }
  });

  it("an error answer matches the error body", async () => {
    const bad = await check("POST", "/v2/control/remember", { body: { session_id: RUN } });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ code: "invalid_argument", details: [] });
    const unknownField = await check("POST", "/v2/control/remember", { body: { session_id: RUN, content: "x", nope: 1 } });
    expect(unknownField.status).toBe(400);
    expect((await check("POST", "/v2/control/remember", { key: null, body: {} })).status).toBe(401);
  });

  it("covers at least one route of every service with a success", () => {
    const tags = new Set<string>();
    for (const label of called) {
      const [verb, template] = label.split(" ") as [string, string];
      for (const tag of operationOf(template, verb)["tags"] as string[]) tags.add(tag);
    }
    const services = (doc["tags"] as JsonObject[]).map((t) => str(t["name"])).filter((name) => name !== "OpenApi");
    expect(services.filter((s) => !tags.has(s))).toEqual([]);
  });
});
