// The transport under misuse, spoken to from outside over loopback as a client would: oversize bodies on kept-alive
// connections, undecodable protobuf, deeply nested JSON, huge invalid values, stalled and idle connections, and the
// removed SDM routes. Each case is a regression test for a defect found by fuzzing the running server.
import http2 from "node:http2";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcCaller, type Caller } from "./harness/callers.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { RememberRequestSchema } from "../gen/engram/v2/memory_service_pb.js";

const MAX_BODY = 256 * 1024;
/** The generous bound within which "never a hang" must resolve: far beyond any timeout configured here. */
const BOUND_MS = 8000;

let server: TestServer;
/** The same service with connection timeouts short enough to observe (300 ms headers and idle, 600 ms request). */
let quick: TestServer;
let grpcClient: Caller;

beforeAll(async () => {
  [server, quick] = await Promise.all([
    startTestServer({ SERVICE_EMBEDDER: "hashed", SERVICE_MAX_REQUEST_BYTES: String(MAX_BODY), SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true" }),
    startTestServer({
      SERVICE_EMBEDDER: "hashed",
      SERVICE_HEADERS_TIMEOUT_MS: "300",
      SERVICE_REQUEST_TIMEOUT_MS: "600",
      SERVICE_IDLE_TIMEOUT_MS: "300",
    }),
  ]);
  grpcClient = grpcCaller(server.port);
});
afterAll(async () => {
  grpcClient.close();
  await Promise.all([server.close(), quick.close()]);
});

// ---------------------------------------------------------------------------------------------------------------
// A raw TCP connection that records everything the server sends and whether (and when) it closed.

class RawConnection {
  readonly socket: net.Socket;
  text = "";
  closed = false;
  readonly #waiters = new Set<() => void>();

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.text += chunk.toString("latin1");
      this.#wake();
    });
    // A reset after the server has closed is still a close; the test only needs to know it happened.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      this.closed = true;
      this.#wake();
    });
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  write(data: string | Buffer): void {
    if (!this.closed) this.socket.write(data);
  }

  /** Resolves once `done(text)` holds or the connection closed, or after `ms` (then `timedOut`). */
  async until(done: (text: string) => boolean, ms = BOUND_MS): Promise<{ timedOut: boolean }> {
    if (done(this.text) || this.closed) return { timedOut: false };
    return new Promise((resolve) => {
      const finish = (timedOut: boolean): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve({ timedOut });
      };
      const check = (): void => {
        if (done(this.text) || this.closed) finish(false);
      };
      const timer = setTimeout(() => finish(true), ms);
      this.#waiters.add(check);
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

function responseCount(text: string): number {
  return text.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Protocol helpers.

function envelope(flags: number, payload: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + payload.length);
  frame[0] = flags;
  frame.writeUInt32BE(payload.length, 1);
  frame.set(payload, 5);
  return frame;
}

function envelopes(body: Buffer): { flags: number; data: Buffer }[] {
  const out: { flags: number; data: Buffer }[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    out.push({ flags: body[at] as number, data: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return out;
}

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

async function postJson(base: string, path: string, body: string, key = server.adminKey): Promise<{ status: number; code: string; message: string }> {
  const response = await fetch(`${base}${path}`, { method: "POST", headers: { ...auth(key), "content-type": "application/json" }, body });
  const json = (await response.json()) as { code?: string; message?: string };
  return { status: response.status, code: String(json.code), message: String(json.message) };
}

async function connectUnary(path: string, contentType: string, body: Uint8Array | string): Promise<{ status: number; code: string; message: string }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { ...auth(server.adminKey), "content-type": contentType, "connect-protocol-version": "1" },
    body,
  });
  const json = (await response.json()) as { code?: string; message?: string };
  return { status: response.status, code: String(json.code), message: String(json.message) };
}

/** A Connect streaming call (application/connect+json or +proto): the error of its end-of-stream message. */
async function connectStreamError(path: string, contentType: string, payload: Uint8Array): Promise<{ code: string; message: string }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { ...auth(server.adminKey), "content-type": contentType, "connect-protocol-version": "1" },
    body: envelope(0, payload),
  });
  const end = envelopes(Buffer.from(await response.arrayBuffer())).find((e) => (e.flags & 0x02) === 0x02);
  const error = (JSON.parse(end?.data.toString("utf8") ?? "{}") as { error?: { code: string; message: string } }).error;
  return { code: String(error?.code), message: String(error?.message) };
}

/** A gRPC-Web call: the status and message of its trailers (in the headers or in the body's trailer frame). */
async function grpcWebStatus(path: string, payload: Uint8Array): Promise<{ status: string; message: string }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { ...auth(server.adminKey), "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
    body: envelope(0, payload),
  });
  const fields = new Map<string, string>();
  for (const name of ["grpc-status", "grpc-message"]) {
    const value = response.headers.get(name);
    if (value !== null) fields.set(name, value);
  }
  const trailer = envelopes(Buffer.from(await response.arrayBuffer())).find((e) => (e.flags & 0x80) === 0x80);
  for (const line of trailer?.data.toString("utf8").split("\r\n") ?? []) {
    const colon = line.indexOf(":");
    if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { status: fields.get("grpc-status") ?? "", message: decodeURIComponent(fields.get("grpc-message") ?? "") };
}

/** A unary gRPC call with @grpc/grpc-js sending these exact request bytes. */
function grpcRawUnary(path: string, request: Buffer): Promise<{ code: number; details: string }> {
  const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${server.adminKey}`);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      request,
      metadata,
      (error: grpc.ServiceError | null) => {
        client.close();
        resolve({ code: error?.code ?? grpc.status.OK, details: error?.details ?? "" });
      },
    );
  });
}

/** A gRPC call over a bare HTTP/2 stream (for the JSON codec, which @grpc/grpc-js does not speak). */
function h2GrpcStatus(path: string, contentType: string, payload: Uint8Array): Promise<{ status: string; message: string }> {
  const session = http2.connect(`http://127.0.0.1:${server.port}`);
  return new Promise((resolve, reject) => {
    const fields = new Map<string, string>();
    const take = (headers: http2.IncomingHttpHeaders): void => {
      for (const name of ["grpc-status", "grpc-message"]) {
        const value = headers[name];
        if (typeof value === "string") fields.set(name, value);
      }
    };
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers", ...auth(server.adminKey) });
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", () => undefined);
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve({ status: fields.get("grpc-status") ?? "", message: decodeURIComponent(fields.get("grpc-message") ?? "") });
    });
    stream.end(envelope(0, payload));
  });
}

function nested(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

// ---------------------------------------------------------------------------------------------------------------

describe("a body over SERVICE_MAX_REQUEST_BYTES never leaves the connection stuck", () => {
  const request = (path: string, length: number, extra = ""): string =>
    `POST ${path} HTTP/1.1\r\nHost: engram\r\nContent-Type: application/json\r\nAuthorization: Bearer ${server.adminKey}\r\n${extra}Content-Length: ${length}\r\n\r\n`;
  const livez = "GET /livez HTTP/1.1\r\nHost: engram\r\n\r\n";

  it("slightly over on the HTTP/JSON gateway: 413, then the next request on the connection is answered", async () => {
    const conn = await RawConnection.open(server.port);
    const body = "x".repeat(MAX_BODY + 50_000);
    conn.write(request("/v2/control/remember", body.length) + body);
    expect((await conn.until((t) => t.includes("request body is larger"))).timedOut).toBe(false);
    expect(conn.text).toMatch(/^HTTP\/1\.1 413 /);
    conn.write(livez);
    expect((await conn.until((t) => responseCount(t) === 2 && t.endsWith("ok"))).timedOut).toBe(false);
    expect(conn.closed).toBe(false);
    expect(conn.text).toMatch(/HTTP\/1\.1 200 OK[\s\S]*ok$/);
    conn.destroy();
  });

  it("far over, sent after the answer: 413 with Connection: close, and the connection closes", async () => {
    const conn = await RawConnection.open(server.port);
    const body = Buffer.alloc(3 * 1024 * 1024, "x");
    conn.write(request("/v2/control/remember", body.length));
    conn.write(body.subarray(0, MAX_BODY + 1));
    expect((await conn.until((t) => t.includes("request body is larger"))).timedOut).toBe(false);
    expect(conn.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(conn.text.toLowerCase()).toContain("connection: close");
    // The rest of the body and a next request: answered, or the connection closes — never a hang.
    conn.write(body.subarray(MAX_BODY + 1));
    conn.write(livez);
    expect((await conn.until((t) => responseCount(t) === 2)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
    expect(responseCount(conn.text)).toBe(1);
  });

  it("chunked and over: 413 with Connection: close, and the connection closes", async () => {
    const conn = await RawConnection.open(server.port);
    const chunk = "x".repeat(64 * 1024);
    conn.write(`POST /v2/control/remember HTTP/1.1\r\nHost: engram\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    for (let i = 0; i < 5; i++) conn.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    expect((await conn.until((t) => t.includes("request body is larger"))).timedOut).toBe(false);
    expect(conn.text.toLowerCase()).toContain("connection: close");
    conn.write(`0\r\n\r\n${livez}`);
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("over on Connect (HTTP/1.1 application/json): resource_exhausted, then the next request is answered", async () => {
    const conn = await RawConnection.open(server.port);
    const body = "x".repeat(MAX_BODY + 50_000);
    conn.write(request("/engram.v2.MemoryService/Remember", body.length, "Connect-Protocol-Version: 1\r\n") + body);
    expect((await conn.until((t) => t.includes("resource_exhausted"))).timedOut).toBe(false);
    expect(conn.text).toMatch(/^HTTP\/1\.1 429 /);
    conn.write(livez);
    expect((await conn.until((t) => responseCount(t) === 2 && t.endsWith("ok"))).timedOut).toBe(false);
    expect(conn.closed).toBe(false);
    conn.destroy();
  });

  it("chunked and over on Connect: resource_exhausted with Connection: close, then the connection closes", async () => {
    const conn = await RawConnection.open(server.port);
    const chunk = "x".repeat(64 * 1024);
    conn.write(
      `POST /engram.v2.MemoryService/Remember HTTP/1.1\r\nHost: engram\r\nContent-Type: application/json\r\nConnect-Protocol-Version: 1\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    for (let i = 0; i < 5; i++) conn.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    expect((await conn.until((t) => t.includes("resource_exhausted"))).timedOut).toBe(false);
    expect(conn.text.toLowerCase()).toContain("connection: close");
    conn.write(`0\r\n\r\n${livez}`);
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("over on HTTP/2: 413, and the session goes on serving", async () => {
    const session = http2.connect(server.baseUrl);
    try {
      const call = (path: string, method: string, body?: Buffer): Promise<{ status: number; text: string }> =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ":method": method, ":path": path, "content-type": "application/json", ...auth(server.adminKey) });
          let status = 0;
          let text = "";
          stream.on("response", (headers) => (status = Number(headers[":status"])));
          stream.on("data", (d: Buffer) => (text += d.toString("utf8")));
          stream.on("close", () => resolve({ status, text }));
          stream.on("error", reject);
          stream.end(body);
        });
      const refused = await call("/v2/control/remember", "POST", Buffer.alloc(MAX_BODY + 50_000, "x"));
      expect(refused.status).toBe(413);
      expect((await call("/livez", "GET")).text).toBe("ok");
    } finally {
      session.close();
    }
  });
});

describe("an undecodable protobuf body is the caller's error on every RPC protocol", () => {
  const garbage = new Uint8Array([0x05, 0x21]);
  const routes = [
    "/engram.v2.MemoryService/Remember",
    "/engram.v2.MemoryService/Recall",
    "/engram.v2.AuthService/ListUsers",
    "/engram.v2.HealthService/Livez",
    "/engram.v2.CoreService/GetStorageStats",
  ];

  it.each(routes)("Connect application/proto on %s: 400 invalid_argument", async (path) => {
    const r = await connectUnary(path, "application/proto", garbage);
    expect(r.status).toBe(400);
    expect(r.code).toBe("invalid_argument");
    expect(r.message).toContain("protobuf");
  });

  it.each(routes)("gRPC on %s: INVALID_ARGUMENT", async (path) => {
    const r = await grpcRawUnary(path, Buffer.from(garbage));
    expect(r.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(r.details).toContain("protobuf");
  });

  it.each(routes)("gRPC-Web on %s: INVALID_ARGUMENT", async (path) => {
    const r = await grpcWebStatus(path, garbage);
    expect(r.status).toBe(String(grpc.status.INVALID_ARGUMENT));
    expect(r.message).toContain("protobuf");
  });

  it("Connect streaming (application/connect+proto) on a server stream: invalid_argument", async () => {
    const r = await connectStreamError("/engram.v2.CoreService/SubscribeCoreEvents", "application/connect+proto", garbage);
    expect(r.code).toBe("invalid_argument");
  });

  it("a truncated message and a bad wire type are refused the same way", async () => {
    // Field 1 (string) announcing 10 bytes but carrying 2; field 1 with the reserved wire type 7.
    for (const bytes of [new Uint8Array([0x0a, 0x0a, 0x61, 0x62]), new Uint8Array([0x0f])]) {
      const r = await connectUnary("/engram.v2.MemoryService/Remember", "application/proto", bytes);
      expect(r.status).toBe(400);
      expect(r.code).toBe("invalid_argument");
    }
  });

  it("a valid protobuf body still works", async () => {
    const bytes = toBinary(RememberRequestSchema, create(RememberRequestSchema, { sessionId: "pb", content: "binary works" }));
    const r = await grpcRawUnary("/engram.v2.MemoryService/Remember", Buffer.from(bytes));
    expect(r.code).toBe(grpc.status.OK);
  });
});

describe("JSON nested deeper than 64 levels is refused with 400 on every route and transport", () => {
  it("HTTP/JSON on the pubsub stream route: 400 invalid_argument naming the limit", async () => {
    const r = await postJson(server.baseUrl, "/v2/core/pubsub/subscribe", `{"filter_type":${nested(5000)}}`);
    expect(r.status).toBe(400);
    expect(r.code).toBe("invalid_argument");
    expect(r.message).toContain("nests deeper than 64 levels");
  });

  it("HTTP/JSON on unary routes, and the limit is exact", async () => {
    for (const path of ["/v2/control/remember", "/v2/control/recall", "/v2/core/auth/users", "/v2/core/pubsub/unsubscribe"]) {
      const r = await postJson(server.baseUrl, path, `{"x":${nested(5000)}}`);
      expect(r.status, path).toBe(400);
      expect(r.message, path).toContain("nests deeper than 64 levels");
    }
    // 64 levels in all (the body object and 63 arrays) is within the limit: refused for its content, not its depth.
    const within = await postJson(server.baseUrl, "/v2/control/remember", `{"session_id":${nested(63)}}`);
    expect(within.status).toBe(400);
    expect(within.message).not.toContain("nests deeper");
    const beyond = await postJson(server.baseUrl, "/v2/control/remember", `{"session_id":${nested(64)}}`);
    expect(beyond.message).toContain("nests deeper than 64 levels");
  });

  it("brackets inside strings do not count", async () => {
    const r = await postJson(server.baseUrl, "/v2/control/remember", JSON.stringify({ session_id: "deep-strings", content: "[".repeat(5000) }));
    expect(r.status).toBe(200);
  });

  it("Connect JSON, unary and streaming: invalid_argument", async () => {
    const unary = await connectUnary("/engram.v2.MemoryService/Remember", "application/json", `{"session_id":${nested(5000)}}`);
    expect(unary.status).toBe(400);
    expect(unary.code).toBe("invalid_argument");
    expect(unary.message).toContain("nests deeper than 64 levels");
    const stream = await connectStreamError(
      "/engram.v2.CoreService/SubscribeCoreEvents",
      "application/connect+json",
      Buffer.from(`{"filter_type":${nested(5000)}}`),
    );
    expect(stream.code).toBe("invalid_argument");
    expect(stream.message).toContain("nests deeper than 64 levels");
  });

  it("gRPC with the JSON codec: INVALID_ARGUMENT", async () => {
    const r = await h2GrpcStatus("/engram.v2.CoreService/SubscribeCoreEvents", "application/grpc+json", Buffer.from(`{"filter_type":${nested(5000)}}`));
    expect(r.status).toBe(String(grpc.status.INVALID_ARGUMENT));
    expect(r.message).toContain("nests deeper than 64 levels");
  });
});

describe("error messages quote at most a short prefix of a bad value", () => {
  const huge = "x".repeat(100_000);

  it("gRPC: a 100k-character invalid value is INVALID_ARGUMENT with a short message naming the field", async () => {
    const r = await grpcClient.call("engram.v2.MemoryService/Remember", { session_id: "s", content: "c", intent: huge }, server.adminKey);
    expect(r.code).toBe("invalid_argument");
    expect(r.message).toMatch(/^intent: /);
    expect(r.message).toContain(`"${"x".repeat(64)}…"`);
    expect(r.message.length).toBeLessThan(200);
  });

  it("HTTP/JSON: the same value, and a 100k-character unknown field name, get short messages", async () => {
    const invalid = await postJson(server.baseUrl, "/v2/control/remember", JSON.stringify({ session_id: "s", content: "c", intent: huge }));
    expect(invalid.status).toBe(400);
    expect(invalid.message).toMatch(/^intent: /);
    expect(invalid.message.length).toBeLessThan(200);
    const unknown = await postJson(server.baseUrl, "/v2/control/remember", JSON.stringify({ session_id: "s", [huge]: 1 }));
    expect(unknown.status).toBe(400);
    expect(unknown.message.length).toBeLessThan(200);
    const query = await fetch(`${server.baseUrl}/v2/core/auth/users?${huge.slice(0, 8000)}=1`, { headers: auth(server.adminKey) });
    const body = (await query.json()) as { message: string };
    expect(query.status).toBe(400);
    expect(body.message.length).toBeLessThan(200);
  });

  it("gRPC with the JSON codec: a 100k-character unknown field name still gets its status and a bounded message", async () => {
    const r = await h2GrpcStatus("/engram.v2.MemoryService/Remember", "application/grpc+json", Buffer.from(JSON.stringify({ [huge]: 1 })));
    expect(r.status).toBe(String(grpc.status.INVALID_ARGUMENT));
    expect(r.message.length).toBeLessThan(1100);
  });
});

describe("connections are bounded in time", () => {
  it("a first request line that never completes is closed after the headers timeout", async () => {
    const conn = await RawConnection.open(quick.port);
    conn.write("GE");
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("a connection that sends part of the HTTP/2 preface and stalls is closed", async () => {
    const conn = await RawConnection.open(quick.port);
    conn.write("PRI * HTTP/2");
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("a connection that sends nothing is closed", async () => {
    const conn = await RawConnection.open(quick.port);
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("headers trickled byte by byte are cut at the headers timeout, though bytes keep coming", async () => {
    const conn = await RawConnection.open(quick.port);
    conn.write("GET /livez HTTP/1.1\r\nHost: engram\r\n");
    const started = Date.now();
    const drip = setInterval(() => conn.write("X-Slow: a\r\n"), 50);
    try {
      expect((await conn.until(() => false)).timedOut).toBe(false);
    } finally {
      clearInterval(drip);
    }
    expect(conn.closed).toBe(true);
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    expect(conn.text).not.toContain("200 OK");
  });

  it("a body that stalls is cut at the request timeout", async () => {
    const conn = await RawConnection.open(quick.port);
    conn.write(`POST /v2/control/remember HTTP/1.1\r\nHost: engram\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"session_id"`);
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("an idle HTTP/1.1 keep-alive connection is closed after the idle timeout", async () => {
    const conn = await RawConnection.open(quick.port);
    conn.write("GET /livez HTTP/1.1\r\nHost: engram\r\n\r\n");
    expect((await conn.until((t) => t.endsWith("ok"))).timedOut).toBe(false);
    expect(conn.closed).toBe(false);
    expect((await conn.until(() => false)).timedOut).toBe(false);
    expect(conn.closed).toBe(true);
  });

  it("an idle HTTP/2 session is sent GOAWAY and closed", async () => {
    const session = http2.connect(quick.baseUrl);
    const closed = new Promise<string>((resolve) => {
      session.once("goaway", () => resolve("goaway"));
      session.once("close", () => resolve("close"));
    });
    const answered = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ":path": "/livez" });
      let text = "";
      stream.on("data", (d: Buffer) => (text += d.toString("utf8")));
      stream.on("close", () => resolve(text));
      stream.on("error", reject);
      stream.end();
    });
    expect(answered).toBe("ok");
    const outcome = await Promise.race([closed, new Promise<string>((resolve) => setTimeout(() => resolve("still open"), BOUND_MS))]);
    session.destroy();
    expect(outcome).not.toBe("still open");
  });

  it("an event stream outlives the idle timeout while events flow, over HTTP/1.1 and HTTP/2", async () => {
    const run = `stream-${Date.now()}`;
    const writer = setInterval(() => {
      void postJson(quick.baseUrl, "/v2/control/remember", JSON.stringify({ session_id: run, content: "an event every 100 ms" }), quick.adminKey);
    }, 100);
    try {
      const path = `/v2/control/events/subscribe?run_id=${run}`;
      // HTTP/1.1 (fetch) and HTTP/2 (node:http2), both held for several idle timeouts.
      const h1 = await fetch(`${quick.baseUrl}${path}`, { headers: auth(quick.adminKey) });
      expect(h1.status).toBe(200);
      const reader = (h1.body as ReadableStream<Uint8Array>).getReader();
      const session = http2.connect(quick.baseUrl);
      let h2Events = 0;
      let h2Closed = false;
      const stream = session.request({ ":path": path, ...auth(quick.adminKey) });
      stream.on("data", (d: Buffer) => (h2Events += d.toString("utf8").split("data:").length - 1));
      stream.on("close", () => (h2Closed = true));
      let h1Events = 0;
      const until = Date.now() + 1500;
      let pending = reader.read();
      while (Date.now() < until) {
        const next = await Promise.race([pending, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200))]);
        if (next === undefined) continue;
        expect(next.done).toBe(false);
        h1Events += new TextDecoder().decode(next.value).split("data:").length - 1;
        pending = reader.read();
      }
      expect(h1Events).toBeGreaterThan(3);
      expect(h2Events).toBeGreaterThan(3);
      expect(h2Closed).toBe(false);
      await reader.cancel();
      stream.close();
      session.close();
    } finally {
      clearInterval(writer);
    }
  });
});

describe("the removed SDM routes answer 410 whatever their body", () => {
  it.each(["/v2/core/sdm/write", "/v2/core/sdm/read"])("%s: unknown fields, malformed JSON, an empty body", async (path) => {
    for (const body of ['{"pattern":[1,2,3],"colour":"red"}', "{not json", "", `{"x":${nested(5000)}}`]) {
      const r = await postJson(server.baseUrl, path, body);
      expect(r.status, body.slice(0, 20)).toBe(410);
      expect(r.message).toContain("was removed");
    }
  });

  it("Connect and gRPC: UNIMPLEMENTED whatever the body", async () => {
    const connect = await connectUnary("/engram.v2.CoreService/SdmWrite", "application/json", '{"colour":"red"}');
    expect(connect.code).toBe("unimplemented");
    expect(connect.message).toContain("was removed");
    const grpcCall = await grpcRawUnary("/engram.v2.CoreService/SdmRead", Buffer.from([0x05, 0x21]));
    expect(grpcCall.code).toBe(grpc.status.UNIMPLEMENTED);
  });
});
