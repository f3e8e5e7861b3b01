// The web console's server over HTTP on a real Engram: /healthz, sign-in and sessions (cookie, expiry, the LRU cap),
// the proxy to the data plane (isolation, CSRF, origin, body limits), health with its metric series, static files
// (SPA fallback, path traversal, caching) and security headers. Expiry runs on an injected clock, never a sleep.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngram, type Engram } from "../src/app.js";
import { loadConfig } from "../src/platform/config.js";
import { createLogger } from "../src/platform/logger.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { freePort } from "./harness/child-server.js";
import { startTestServer, tempDataDir } from "./harness/server.js";
import { createUser } from "./harness/users.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const IDLE_MS = 60_000;
const MAX_MS = 600_000;
const MAX_REQUEST_BYTES = 65_536;
const SIGN_IN_REFUSED = { error: "invalid username or API key" };
const CSRF_REFUSED = { error: "missing or wrong CSRF token" };
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

interface ConsoleUnderTest {
  readonly engram: Engram;
  readonly dataUrl: string;
  readonly consoleUrl: string;
  readonly adminKey: string;
  /** The console's clock: tests move it instead of waiting. */
  readonly clock: { t: number };
}

async function startWithConsole(env: Record<string, string>): Promise<ConsoleUnderTest> {
  const adminKey = mintApiKey("local").key;
  const clock = { t: Date.UTC(2030, 0, 1) };
  const config = loadConfig({
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_PORT: "0",
    SERVICE_HOST: "127.0.0.1",
    SERVICE_DATA_DIR: tempDataDir(),
    SERVICE_LOG_LEVEL: "silent",
    SERVICE_EMBEDDER: "hashed",
    SERVICE_CONSOLE_PORT: String(await freePort()),
    ...env,
  });
  const engram = await startEngram(config, { logger: createLogger("silent"), now: () => clock.t });
  return { engram, dataUrl: `http://127.0.0.1:${engram.port}`, consoleUrl: `http://127.0.0.1:${engram.consolePort}`, adminKey, clock };
}

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: JsonObject;
}

interface CallOptions {
  readonly method?: string;
  readonly body?: unknown;
  /** Sent as is: a string is not JSON-encoded. */
  readonly rawBody?: string;
  readonly session?: Session;
  readonly csrf?: string;
  readonly origin?: string;
  readonly headers?: Record<string, string>;
}

interface Session {
  readonly cookie: string;
  readonly csrf: string;
  readonly body: JsonObject;
}

/** Every response text and Set-Cookie seen, to check at the end that no API key ever reached the browser. */
const seen: string[] = [];
const keys: string[] = [];

async function call(base: string, route: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.session !== undefined) headers["cookie"] = options.session.cookie;
  if (options.csrf !== undefined) headers["x-csrf-token"] = options.csrf;
  if (options.origin !== undefined) headers["origin"] = options.origin;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${base}${route}`, { method: options.method ?? (body === undefined ? "GET" : "POST"), headers, body });
  const text = await response.text();
  seen.push(text, ...response.headers.getSetCookie());
  let json: JsonObject = {};
  try {
    json = JSON.parse(text) as JsonObject;
  } catch {
    // not JSON (static files, 503 text)
  }
  return { status: response.status, headers: response.headers, text, json };
}

async function signIn(base: string, username: string, apiKey: string): Promise<Session> {
  const r = await call(base, "/console/api/sign-in", { body: { username, api_key: apiKey } });
  expect(r.status, r.text).toBe(200);
  const cookie = (r.headers.getSetCookie()[0] ?? "").split(";", 1)[0] ?? "";
  return { cookie, csrf: String(r.json["csrf_token"]), body: r.json };
}

/** A GET with the path exactly as written: fetch would resolve `..` before sending. */
async function rawGet(base: string, rawPath: string): Promise<{ status: number; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: rawPath, method: "GET" }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

function expectSecurityHeaders(headers: Headers): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(headers.get(name), name).toBe(value);
}

describe("the console server", () => {
  let c: ConsoleUnderTest;
  let base: string;
  let alice: string;
  let bob: string;
  let site: string;

  const post = (route: string, body: unknown, session: Session, extra: CallOptions = {}): Promise<Reply> =>
    call(base, `/console/api/v2${route}`, { body, session, csrf: session.csrf, ...extra });

  /** The run's entries as its owner sees them through the console. */
  const entriesOf = async (session: Session, runId: string): Promise<string[]> => {
    const r = await post("/control/activity", { run_id: runId, limit: 100 }, session);
    expect(r.status, r.text).toBe(200);
    return ((r.json["entries"] ?? []) as JsonObject[]).map((e) => String(e["content"]));
  };

  beforeAll(async () => {
    site = fs.mkdtempSync(path.join(os.tmpdir(), "engram-console-site-"));
    const assets = path.join(site, "console");
    fs.mkdirSync(path.join(assets, "assets"), { recursive: true });
    fs.writeFileSync(path.join(assets, "index.html"), "<!doctype html><title>Engram console</title>");
    fs.writeFileSync(path.join(assets, "assets", "app-AbCd1234.js"), "export const app = 1;\n");
    fs.writeFileSync(path.join(assets, "robots.txt"), "User-agent: *\n");
    fs.writeFileSync(path.join(site, "secret.txt"), "TOP SECRET outside the console");
    fs.symlinkSync(path.join(site, "secret.txt"), path.join(assets, "leak.txt"));
    c = await startWithConsole({
      SERVICE_CONSOLE_ASSETS_DIR: assets,
      SERVICE_CONSOLE_SESSION_IDLE_MS: String(IDLE_MS),
      SERVICE_CONSOLE_SESSION_MAX_MS: String(MAX_MS),
      SERVICE_MAX_REQUEST_BYTES: String(MAX_REQUEST_BYTES),
    });
    base = c.consoleUrl;
    alice = await createUser(c.dataUrl, c.adminKey, "alice");
    bob = await createUser(c.dataUrl, c.adminKey, "bob");
    keys.push(c.adminKey, alice, bob);
  });
  afterAll(async () => {
    await c.engram.close();
    fs.rmSync(site, { recursive: true, force: true });
  });

  it("answers /healthz without a session, with the security headers", async () => {
    expect(c.engram.consolePort).toBeGreaterThan(0);
    expect(c.engram.consolePort).not.toBe(c.engram.port);
    const r = await call(base, "/healthz");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: "ok" });
    expectSecurityHeaders(r.headers);
  });

  it("signs in with a username and its key: an HttpOnly, SameSite=Strict cookie and a CSRF token, never the key", async () => {
    const r = await call(base, "/console/api/sign-in", { body: { username: "alice", api_key: alice } });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.getSetCookie()).toHaveLength(1);
    expect(r.headers.getSetCookie()[0]).toMatch(/^engram_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=600$/);
    expect(r.json).toEqual({ username: "alice", role: "user", csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: new Date(c.clock.t + IDLE_MS).toISOString() });
    expect(r.headers.get("cache-control")).toBe("no-store");
    expectSecurityHeaders(r.headers);
    expect(r.text).not.toContain(alice);

    const cookie = (r.headers.getSetCookie()[0] ?? "").split(";", 1)[0] ?? "";
    const again = await call(base, "/console/api/session", { session: { cookie, csrf: "", body: {} } });
    expect(again.status).toBe(200);
    expect(again.json).toEqual(r.json);
    expect(again.headers.getSetCookie()).toEqual([]);

    // Two sign-ins never share an id or a token.
    const other = await signIn(base, "alice", alice);
    expect(other.cookie).not.toBe(cookie);
    expect(other.csrf).not.toBe(r.json["csrf_token"]);
  });

  it("refuses a wrong key, another user's key and an unknown user with the same 401", async () => {
    const attempts = [
      { username: "alice", api_key: mintApiKey("local").key },
      { username: "alice", api_key: bob },
      { username: "nobody", api_key: alice },
      { username: "alice", api_key: "not-a-key" },
      { username: "alice", api_key: `${alice.slice(0, -4)}0000` },
      { username: "admin", api_key: alice },
    ];
    for (const attempt of attempts) {
      const r = await call(base, "/console/api/sign-in", { body: attempt });
      expect(r.status, JSON.stringify(attempt)).toBe(401);
      expect(r.json).toEqual(SIGN_IN_REFUSED);
      expect(r.headers.getSetCookie()).toEqual([]);
    }
    expect((await call(base, "/console/api/session")).json).toEqual({ error: "signed out" });
  });

  it("answers 400 naming a missing field, and 400 for a body that is not a JSON object", async () => {
    const cases: [unknown, string][] = [
      [{}, "username"],
      [{ api_key: alice }, "username"],
      [{ username: "alice" }, "api_key"],
      [{ username: "", api_key: alice }, "username"],
      [{ username: 7, api_key: alice }, "username"],
      [{ username: "alice", api_key: null }, "api_key"],
    ];
    for (const [body, field] of cases) {
      const r = await call(base, "/console/api/sign-in", { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json["field"]).toBe(field);
      expect(String(r.json["error"])).toContain(field);
    }
    for (const rawBody of ["{", "", "[1,2]", "\"alice\"", "null"]) {
      const r = await call(base, "/console/api/sign-in", { rawBody });
      expect(r.status, rawBody).toBe(400);
      expect(typeof r.json["error"]).toBe("string");
    }
    expect((await call(base, "/console/api/sign-in")).status).toBe(405);
  });

  it("proxies data-plane calls with the session's key, and refuses them without a session", async () => {
    const s = await signIn(base, "alice", alice);
    const remembered = await post("/control/remember", { session_id: "alice-run", content: "The deploy key rotates every Friday." }, s);
    expect(remembered.status, remembered.text).toBe(200);
    expect(remembered.headers.get("content-type")).toContain("application/json");
    expect(remembered.headers.get("cache-control")).toBe("no-store");
    expectSecurityHeaders(remembered.headers);
    const found = await post("/control/query", { run_id: "alice-run", query: "when does the deploy key rotate" }, s);
    expect(found.status, found.text).toBe(200);
    expect((found.json["evidence"] as JsonObject[]).map((e) => e["content"])).toContain("The deploy key rotates every Friday.");
    // GET with a query string goes through as well.
    const runs = await call(base, "/console/api/v2/control/runs?limit=10", { session: s });
    expect(runs.status, runs.text).toBe(200);
    expect(JSON.stringify(runs.json)).toContain("alice-run");
    // The data plane's own errors come back as they are.
    const bad = await post("/control/remember", { session_id: "alice-run" }, s);
    expect(bad.status).toBe(400);
    expect(bad.json["code"]).toBe("invalid_argument");

    const anonymous = await call(base, "/console/api/v2/control/runs");
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toEqual({ error: "signed out" });
    // A key the browser sends itself is no session, and is not passed on.
    const withKey = await call(base, "/console/api/v2/control/runs", { headers: { authorization: `Bearer ${alice}` } });
    expect(withKey.status).toBe(401);
    const forged = await call(base, "/console/api/v2/control/runs", { session: { cookie: `engram_console=${"A".repeat(43)}`, csrf: "", body: {} } });
    expect(forged.status).toBe(401);
    expect(forged.headers.getSetCookie()[0]).toMatch(/^engram_console=; .*Max-Age=0$/);
  });

  it("shows another user's run to nobody: the answer is the one for a run that does not exist", async () => {
    const a = await signIn(base, "alice", alice);
    const b = await signIn(base, "bob", bob);
    expect((await post("/control/remember", { session_id: "private-run", content: "Alice's launch code is 7311." }, a)).status).toBe(200);
    expect(await entriesOf(a, "private-run")).toEqual(["Alice's launch code is 7311."]);

    for (const route of ["/control/activity", "/control/query", "/control/context"]) {
      const body = (runId: string): JsonObject => ({ run_id: runId, query: "launch code", limit: 10 });
      const theirs = await post(route, body("private-run"), b);
      const none = await post(route, body("no-such-run"), b);
      expect(theirs.status, route).toBe(none.status);
      expect(theirs.text.replaceAll("private-run", "RUN"), route).toBe(none.text.replaceAll("no-such-run", "RUN"));
      expect(theirs.text).not.toContain("7311");
    }
    const runs = await call(base, "/console/api/v2/control/runs", { session: b });
    expect(runs.status).toBe(200);
    expect(runs.text).not.toContain("private-run");
    // Bob's browser sending Alice's key changes nothing: the session's key is the one used.
    const smuggled = await call(base, "/console/api/v2/control/runs", { session: b, headers: { authorization: `Bearer ${alice}` } });
    expect(smuggled.text).not.toContain("private-run");
  });

  it("refuses a state-changing call without the session's CSRF token or from another origin, writing nothing", async () => {
    const a = await signIn(base, "alice", alice);
    const b = await signIn(base, "bob", bob);
    const write = (extra: CallOptions): Promise<Reply> =>
      call(base, "/console/api/v2/control/remember", { body: { session_id: "csrf-run", content: "forged write" }, session: a, ...extra });
    for (const extra of [{}, { csrf: "" }, { csrf: b.csrf }, { csrf: `${a.csrf}x` }]) {
      const r = await write(extra);
      expect(r.status, JSON.stringify(extra)).toBe(403);
      expect(r.json).toEqual(CSRF_REFUSED);
    }
    const foreign = await write({ csrf: a.csrf, origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    expect((await write({ csrf: a.csrf, origin: "null" })).status).toBe(403);
    expect(await entriesOf(a, "csrf-run")).toEqual([]);
    // Reads from another origin and sign-in from another origin are refused too.
    expect((await call(base, "/console/api/session", { session: a, origin: "http://evil.example" })).status).toBe(403);
    const signInElsewhere = await call(base, "/console/api/sign-in", { body: { username: "alice", api_key: alice }, origin: "http://evil.example" });
    expect(signInElsewhere.status).toBe(403);
    expect(signInElsewhere.headers.getSetCookie()).toEqual([]);
    // The console's own origin with the right token goes through.
    const own = await write({ csrf: a.csrf, origin: base });
    expect(own.status, own.text).toBe(200);
    expect(await entriesOf(a, "csrf-run")).toEqual(["forged write"]);
  });

  it("signs out with the CSRF token: 204, the cookie cleared, the session gone", async () => {
    const s = await signIn(base, "alice", alice);
    expect((await call(base, "/console/api/sign-out", { method: "POST", session: s })).status).toBe(403);
    expect((await call(base, "/console/api/session", { session: s })).status).toBe(200);
    const out = await call(base, "/console/api/sign-out", { method: "POST", session: s, csrf: s.csrf });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toBe("engram_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    expect((await call(base, "/console/api/session", { session: s })).status).toBe(401);
    expect((await call(base, "/console/api/v2/control/runs", { session: s })).status).toBe(401);
    expect((await post("/control/remember", { session_id: "after-sign-out", content: "x" }, s)).status).toBe(401);
  });

  it("ends a session left idle, and restarts the idle time on each use", async () => {
    const s = await signIn(base, "alice", alice);
    c.clock.t += IDLE_MS - 1;
    const used = await call(base, "/console/api/session", { session: s });
    expect(used.status).toBe(200);
    expect(used.json["expires_at"]).toBe(new Date(c.clock.t + IDLE_MS).toISOString());
    c.clock.t += IDLE_MS - 1;
    expect((await call(base, "/console/api/v2/control/runs", { session: s })).status).toBe(200);
    c.clock.t += IDLE_MS;
    const expired = await call(base, "/console/api/session", { session: s });
    expect(expired.status).toBe(401);
    expect(expired.json).toEqual({ error: "signed out" });
    expect(expired.headers.getSetCookie()[0]).toMatch(/Max-Age=0$/);
  });

  it("ends a session at its absolute lifetime however busy it is", async () => {
    const s = await signIn(base, "alice", alice);
    const signedInAt = c.clock.t;
    while (c.clock.t + IDLE_MS / 2 < signedInAt + MAX_MS) {
      c.clock.t += IDLE_MS / 2;
      const r = await call(base, "/console/api/session", { session: s });
      expect(r.status).toBe(200);
      expect(Date.parse(String(r.json["expires_at"]))).toBeLessThanOrEqual(signedInAt + MAX_MS);
    }
    c.clock.t = signedInAt + MAX_MS;
    expect((await call(base, "/console/api/session", { session: s })).status).toBe(401);
  });

  it("ends a session whose key is revoked", async () => {
    const carol = await createUser(c.dataUrl, c.adminKey, "carol");
    keys.push(carol);
    const s = await signIn(base, "carol", carol);
    const revoked = await fetch(`${c.dataUrl}/v2/core/auth/users/carol/revoke_key`, { method: "POST", headers: { authorization: `Bearer ${c.adminKey}`, "content-type": "application/json" }, body: "{}" });
    expect(revoked.status).toBe(200);
    expect((await call(base, "/console/api/session", { session: s })).status).toBe(401);
    expect((await call(base, "/console/api/sign-in", { body: { username: "carol", api_key: carol } })).json).toEqual(SIGN_IN_REFUSED);
  });

  it("reports health: readiness for everyone, server-wide metric series only for an admin", async () => {
    const user = await call(base, "/console/api/health", { session: await signIn(base, "alice", alice) });
    expect(user.status, user.text).toBe(200);
    expect(user.json["readiness"]).toEqual({ status: "ready" });
    // Storage statistics are server-wide, so the data plane refuses them to a user (403): the console shows none.
    expect(user.json["storage"]).toBeNull();
    expect(user.json["series"]).toBeNull();

    const admin = await signIn(base, "admin", c.adminKey);
    expect(admin.body["role"]).toBe("admin");
    expect((await post("/control/query", { run_id: "admin-run", query: "anything" }, admin)).status).toBe(200);
    c.clock.t += 5000;
    const r = await call(base, "/console/api/health", { session: admin });
    expect(r.status, r.text).toBe(200);
    expect(r.json["readiness"]).toEqual({ status: "ready" });
    expect(r.json["storage"]).not.toBeNull();
    const series = r.json["series"] as { interval_ms: number; points: JsonObject[] };
    expect(series.interval_ms).toBe(5000);
    expect(series.points.length).toBeGreaterThan(0);
    for (const point of series.points) {
      expect(Object.keys(point).sort()).toEqual(["ingest_items_per_s", "query_p50_ms", "query_p99_ms", "requests_per_s", "t"]);
      expect(point["ingest_items_per_s"]).toBeGreaterThanOrEqual(0);
    }
    const withQueries = series.points.filter((p) => p["query_p50_ms"] !== null);
    expect(withQueries.length).toBeGreaterThan(0);
    for (const p of withQueries) {
      expect(p["query_p50_ms"]).toBeGreaterThan(0);
      expect(Number(p["query_p99_ms"])).toBeGreaterThanOrEqual(Number(p["query_p50_ms"]));
      expect(p["requests_per_s"]).toBeGreaterThan(0);
    }
    expect((await call(base, "/console/api/health")).status).toBe(401);
  });

  it("serves the built frontend: index.html for / and unknown paths, assets with their types and caching", async () => {
    const index = await call(base, "/");
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(index.text).toContain("Engram console");
    expect(index.headers.get("cache-control")).toBe("no-cache");
    expectSecurityHeaders(index.headers);
    const fallback = await call(base, "/runs/some-run?x=1");
    expect(fallback.status).toBe(200);
    expect(fallback.text).toBe(index.text);
    const asset = await call(base, "/assets/app-AbCd1234.js");
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(asset.text).toBe("export const app = 1;\n");
    const robots = await call(base, "/robots.txt");
    expect(robots.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(robots.headers.get("cache-control")).toBe("no-cache");
    const head = await fetch(`${base}/assets/app-AbCd1234.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("22");
    expect((await call(base, "/", { method: "POST", rawBody: "{}" })).status).toBe(405);
    const unknownApi = await call(base, "/console/api/nothing-here");
    expect(unknownApi.status).toBe(404);
    expectSecurityHeaders(unknownApi.headers);
  });

  it("never serves a file outside the console's directory", async () => {
    const attempts = [
      "/../secret.txt",
      "/../package.json",
      "/%2e%2e/secret.txt",
      "/%2E%2E/%2e%2e/package.json",
      "/..%2fsecret.txt",
      "/%2e%2e%2fsecret.txt",
      "/assets/..%2f..%2fsecret.txt",
      "/assets/../../secret.txt",
      "/..%5csecret.txt",
      "/..\\secret.txt",
      "/%00/secret.txt",
      "/%zz",
    ];
    for (const attempt of attempts) {
      const r = await rawGet(base, attempt);
      expect(r.status, attempt).toBe(400);
      expect(r.text, attempt).not.toContain("TOP SECRET");
      expect(r.text, attempt).not.toContain("\"name\": \"engram\"");
    }
    // A symlink out of the directory is no file of the console: the SPA answer comes instead.
    const link = await rawGet(base, "/leak.txt");
    expect(link.text).not.toContain("TOP SECRET");
    expect(link.text).toContain("Engram console");
    // Nor can a proxied path climb out of /v2/.
    const s = await signIn(base, "alice", alice);
    for (const attempt of ["/console/api/v2/../metrics", "/console/api/v2/%2e%2e/metrics", "/console/api/v2/control/..%2f..%2fmetrics"]) {
      const r = await call(base, attempt, { session: s });
      expect(r.text, attempt).not.toContain("service_rpc_requests_total");
    }
    const dotted = await rawGet(base, "/console/api/v2/../metrics");
    expect(dotted.status).toBe(400);
  });

  it("answers 413 to a body over the limit, writing nothing", async () => {
    const s = await signIn(base, "alice", alice);
    const big = await post("/control/remember", { session_id: "big-run", content: "x".repeat(MAX_REQUEST_BYTES) }, s);
    expect(big.status).toBe(413);
    expect(await entriesOf(s, "big-run")).toEqual([]);
    const bigSignIn = await call(base, "/console/api/sign-in", { body: { username: "alice", api_key: alice, padding: "x".repeat(20_000) } });
    expect(bigSignIn.status).toBe(413);
    expect(bigSignIn.headers.getSetCookie()).toEqual([]);
    // The connection and the session still serve the next request.
    expect((await post("/control/remember", { session_id: "big-run", content: "small" }, s)).status).toBe(200);
  });

  it("never sends an API key to the browser", () => {
    expect(seen.length).toBeGreaterThan(50);
    for (const key of keys) {
      const secret = key.split("_")[3] ?? key;
      for (const text of seen) expect(text).not.toContain(secret);
    }
  });
});

describe("a console holding at most two sessions, with no frontend built", () => {
  let c: ConsoleUnderTest;

  beforeAll(async () => {
    c = await startWithConsole({ SERVICE_CONSOLE_MAX_SESSIONS: "2", SERVICE_CONSOLE_ASSETS_DIR: path.join(tempDataDir(), "not-built") });
  });
  afterAll(async () => c.engram.close());

  it("evicts the least recently used session when a sign-in goes over the cap", async () => {
    const alice = await createUser(c.dataUrl, c.adminKey, "alice");
    const bob = await createUser(c.dataUrl, c.adminKey, "bob");
    const first = await signIn(c.consoleUrl, "alice", alice);
    const second = await signIn(c.consoleUrl, "bob", bob);
    expect((await call(c.consoleUrl, "/console/api/session", { session: first })).status).toBe(200);
    const third = await signIn(c.consoleUrl, "admin", c.adminKey);
    expect((await call(c.consoleUrl, "/console/api/session", { session: second })).status).toBe(401);
    expect((await call(c.consoleUrl, "/console/api/session", { session: first })).status).toBe(200);
    expect((await call(c.consoleUrl, "/console/api/session", { session: third })).status).toBe(200);
  });

  it("answers 503 naming the build step when the frontend is not built", async () => {
    for (const route of ["/", "/runs/x"]) {
      const r = await call(c.consoleUrl, route);
      expect(r.status).toBe(503);
      expect(r.text).toBe("console not built: run make build");
      expectSecurityHeaders(r.headers);
    }
    expect((await call(c.consoleUrl, "/healthz")).status).toBe(200);
  });
});

describe("console configuration", () => {
  it("is off in the test harness unless asked for, and a disabled console reports port 0", async () => {
    const server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
    try {
      expect(server.engram.consolePort).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("validates its settings", () => {
    expect(loadConfig({}).consolePort).toBe(8080);
    expect(loadConfig({}).consoleSessionIdleMs).toBe(1_800_000);
    expect(loadConfig({}).consoleSessionMaxMs).toBe(43_200_000);
    expect(loadConfig({}).consoleMaxSessions).toBe(1000);
    expect(() => loadConfig({ SERVICE_CONSOLE_PORT: "70000" })).toThrow(/SERVICE_CONSOLE_PORT/);
    expect(() => loadConfig({ SERVICE_CONSOLE_PORT: "3000", SERVICE_PORT: "3000" })).toThrow(/SERVICE_CONSOLE_PORT must differ/);
    expect(() => loadConfig({ SERVICE_CONSOLE_MAX_SESSIONS: "0" })).toThrow(/SERVICE_CONSOLE_MAX_SESSIONS/);
    expect(() => loadConfig({ SERVICE_CONSOLE_SESSION_IDLE_MS: "soon" })).toThrow(/SERVICE_CONSOLE_SESSION_IDLE_MS/);
  });
});
