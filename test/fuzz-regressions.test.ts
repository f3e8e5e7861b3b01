// Regression tests for the defects the descriptor fuzzer (test/fuzz) found, each the request it sent, trimmed to
// what matters: malformed gRPC framing answered as a server fault (INTERNAL) or a missing feature (UNIMPLEMENTED),
// JSON text fields nested deep enough to overflow the stack, client resets logged as internal errors, deadlines too
// long for a Node timer, and HTTP/2 streams and sessions that answered calls no more.
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed", SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true" });
  key = await createUser(server.baseUrl, server.adminKey, "fuzz-regressions");
});
afterAll(() => server.close());

/** A gRPC length-prefixed frame with any flags. */
function frame(flags: number, data: Uint8Array = new Uint8Array(0)): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(data.byteLength, 1);
  return Buffer.concat([header, data]);
}

interface GrpcAnswer {
  readonly httpStatus: number;
  /** grpc-status, from the trailers (gRPC) or from the trailer frame in the body (gRPC-Web). */
  readonly code: number | undefined;
  readonly message: string;
  readonly acceptEncoding: string | undefined;
}

/** One call over raw HTTP/2, so the framing and headers are exactly what the fuzzer sent. */
async function rawGrpc(path: string, body: Buffer, headers: Record<string, string> = {}, contentType = "application/grpc"): Promise<GrpcAnswer> {
  const session = http2.connect(server.baseUrl);
  try {
    return await new Promise<GrpcAnswer>((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers", authorization: `Bearer ${key}`, ...headers });
      let httpStatus = 0;
      let code: number | undefined;
      let message = "";
      let acceptEncoding: string | undefined;
      const chunks: Buffer[] = [];
      const read = (h: http2.IncomingHttpHeaders): void => {
        if (h["grpc-status"] !== undefined) code = Number(h["grpc-status"]);
        if (h["grpc-message"] !== undefined) message = decodeURIComponent(String(h["grpc-message"]));
        if (h["grpc-accept-encoding"] !== undefined) acceptEncoding = String(h["grpc-accept-encoding"]);
      };
      stream.on("response", (h) => {
        httpStatus = Number(h[":status"]);
        read(h);
      });
      stream.on("trailers", read);
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", reject);
      stream.on("close", () => {
        const bytes = Buffer.concat(chunks);
        // gRPC-Web: the trailers are the last frame of the body, flagged 0x80.
        if (code === undefined && bytes.length >= 5 && (bytes.readUInt8(0) & 0x80) !== 0) {
          const text = bytes.subarray(5).toString("latin1");
          code = Number(/grpc-status:\s*(\d+)/.exec(text)?.[1]);
          message = decodeURIComponent(/grpc-message:\s*([^\r\n]*)/.exec(text)?.[1] ?? "");
        }
        resolve({ httpStatus, code, message, acceptEncoding });
      });
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

/** A Connect server-stream call over HTTP/1.1; resolves the code of its end-of-stream error, if any. */
async function connectStreamCode(path: string, body: Buffer): Promise<string | undefined> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/connect+json", "connect-protocol-version": "1" },
    body,
  });
  expect(response.status).toBe(200);
  // Read up to the end of the first frame, then cancel: a stream that opened does not end by itself.
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let bytes = Buffer.alloc(0);
  while (bytes.length < 5 || bytes.length < 5 + bytes.readUInt32BE(1)) {
    const next = await reader.read();
    if (next.done) break;
    bytes = Buffer.concat([bytes, next.value]);
  }
  await reader.cancel();
  // The first frame is the answer: a message (flags 0) or the end of the stream (flags 0x02) carrying the error.
  if ((bytes.readUInt8(0) & 0x02) === 0) return undefined;
  const end = JSON.parse(bytes.subarray(5, 5 + bytes.readUInt32BE(1)).toString("utf8")) as { error?: { code?: string } };
  return end.error?.code;
}

const LIVEZ = "/engram.v2.HealthService/Livez";
const METRICS = "/engram.v2.HealthService/Metrics";
const SUBSCRIBE = "/engram.v2.EventsService/Subscribe";

describe("a frame flagged compressed in a call that declares no compression is INVALID_ARGUMENT, not INTERNAL", () => {
  // Fuzzer: gRPC framing on every RPC, e.g. HealthService/Readyz with body 7f 00 00 00 00 (seed 3, request #14245).
  it.each([
    ["gRPC, flag 0x01", "application/grpc", 0x01],
    ["gRPC, flags 0x7f (the compressed bit among unknown ones)", "application/grpc", 0x7f],
    ["gRPC-Web, flag 0x01", "application/grpc-web", 0x01],
  ])("%s", async (_name, contentType, flags) => {
    const answer = await rawGrpc(LIVEZ, frame(flags), {}, contentType);
    expect(answer.httpStatus).toBe(200);
    expect(answer.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.message).toContain("compressed");
  });

  it("grpc-encoding: identity declares no compression either", async () => {
    const answer = await rawGrpc(LIVEZ, frame(0x01), { "grpc-encoding": "identity" });
    expect(answer.code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("Connect streaming (application/connect+json): invalid_argument", async () => {
    // Fuzzer: CoreService/SubscribeCoreEvents over Connect with the compressed flag (seed 2, request #547).
    const code = await connectStreamCode("/engram.v2.CoreService/SubscribeCoreEvents", frame(0x01, Buffer.from('{"filter_type":"all"}')));
    expect(code).toBe("invalid_argument");
  });

  it("a compression the server does not accept, declared, is still the protocol's UNIMPLEMENTED with grpc-accept-encoding", async () => {
    const answer = await rawGrpc(LIVEZ, frame(0x01), { "grpc-encoding": "gzip" });
    expect(answer.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(answer.acceptEncoding).toBeDefined();
  });
});

describe("a one-message method sent two messages, or none, is INVALID_ARGUMENT, not UNIMPLEMENTED", () => {
  // Fuzzer: PlanningService/RunCycle over gRPC-Web with two frames (seed 1, request #625); HealthService/Metrics with
  // an empty frame then a cut one (seed 1, request #1345).
  it.each([
    ["unary over gRPC", LIVEZ, "application/grpc"],
    ["unary over gRPC-Web", METRICS, "application/grpc-web"],
    ["server stream over gRPC", SUBSCRIBE, "application/grpc"],
  ])("two messages: %s", async (_name, path, contentType) => {
    const answer = await rawGrpc(path, Buffer.concat([frame(0), frame(0)]), {}, contentType);
    expect(answer.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.message).toContain("exactly one message");
  });

  it.each([
    ["unary over gRPC", LIVEZ, "application/grpc"],
    ["unary over gRPC-Web", LIVEZ, "application/grpc-web"],
    ["server stream over gRPC", SUBSCRIBE, "application/grpc"],
  ])("no message: %s", async (_name, path, contentType) => {
    const answer = await rawGrpc(path, Buffer.alloc(0), {}, contentType);
    expect(answer.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.message).toContain("exactly one message");
  });

  it("Connect streaming: two messages and no message are invalid_argument", async () => {
    const message = Buffer.from("{}");
    expect(await connectStreamCode(SUBSCRIBE, Buffer.concat([frame(0, message), frame(0, message)]))).toBe("invalid_argument");
    expect(await connectStreamCode(SUBSCRIBE, Buffer.alloc(0))).toBe("invalid_argument");
  });

  it("one message, with a Connect end-of-stream frame after it, is still served", async () => {
    // The end-of-stream frame (0x02) is not a message: Connect skips it, and so does the count.
    const code = await connectStreamCode(SUBSCRIBE, Buffer.concat([frame(0, Buffer.from("{}")), frame(0x02, Buffer.from("{}"))]));
    expect(code).toBeUndefined();
  });

  it("exactly one message is served", async () => {
    const answer = await rawGrpc(LIVEZ, frame(0));
    expect(answer.code).toBe(grpc.status.OK);
  });
});

/** A JSON text nested `depth` levels deep. */
function deepJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

async function rest(path: string, body: object): Promise<{ status: number; code: string; message: string }> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { code?: string; message?: string };
  return { status: response.status, code: json.code ?? "ok", message: json.message ?? "" };
}

describe("a JSON text field nested deeper than 64 levels is INVALID_ARGUMENT naming it, not a stack overflow", () => {
  // Fuzzer: MemoryService/ArchiveBlock over gRPC with metadata_json nested ~43,000 deep (seed 777, request #15571):
  // JSON.parse accepted it, then JSON.stringify overflowed the stack adding the archive's keys — INTERNAL.
  it.each([
    ["archive", "/v2/control/archive", { run_id: "deep", content: "artifact", metadata_json: deepJson(50_000) }, "metadata_json"],
    ["checkpoint", "/v2/control/checkpoint", { run_id: "deep", label: "cp", context_snapshot: "state", metadata_json: deepJson(50_000) }, "metadata_json"],
    ["ingest item", "/v2/control/ingest", { run_id: "deep", items: [{ text: "x", metadata_json: deepJson(50_000) }] }, "items[0].metadata_json"],
    ["remember", "/v2/control/remember", { session_id: "deep", content: "x", metadata_json: deepJson(65) }, "metadata_json"],
    ["variable", "/v2/control/variables/set", { run_id: "deep", name: "v", value_json: deepJson(65) }, "value_json"],
    ["core node", "/v2/core/batch_insert", { nodes: [{ run_id: "deep", text: "x", metadata_json: deepJson(65) }] }, "metadata_json"],
  ])("%s", async (_name, path, body, field) => {
    const answer = await rest(path, body);
    expect(answer.status).toBe(400);
    expect(answer.code).toBe("invalid_argument");
    expect(answer.message).toContain(field);
    expect(answer.message).toContain("64 levels");
  });

  it("64 levels is still accepted, and stored as sent", async () => {
    const answer = await rest("/v2/control/archive", { run_id: "deep", content: "artifact at the limit", metadata_json: deepJson(64) });
    expect(answer.status).toBe(200);
  });
});

/** The count of `rpc` calls over gRPC by result code, from /metrics. */
async function grpcCallsByCode(rpc: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  const series = new RegExp(`^service_rpc_requests_total\\{[^}]*rpc="${rpc}",transport="grpc",code="([a-z_]+)"\\} (\\d+)$`, "gm");
  for (const [, code, count] of text.matchAll(series)) counts[code as string] = Number(count);
  return counts;
}

describe("a client that resets its stream while the server reads the request is a cancelled call, not INTERNAL", () => {
  // Fuzzer: EventsService/Subscribe and CoreService/SubscribeCoreEvents over gRPC with a 1-5 ms deadline (seed 778):
  // the reset surfaced as ERR_STREAM_PREMATURE_CLOSE from the body read, logged at error level as an internal error.
  it.each([["engram.v2.EventsService/Subscribe"], ["engram.v2.CoreService/SubscribeCoreEvents"]])("%s", async (rpc) => {
    const before = await grpcCallsByCode(rpc);
    const session = http2.connect(server.baseUrl);
    try {
      const stream = session.request({ ":method": "POST", ":path": `/${rpc}`, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key}` });
      stream.on("error", () => undefined);
      const header = Buffer.alloc(5);
      header.writeUInt32BE(1_000_000, 1);
      // More than HTTP/2's initial 64 KiB window: the write completes only once the server is reading the body.
      await new Promise<void>((resolve) => stream.write(Buffer.concat([header, Buffer.alloc(200_000, 0x61)]), () => resolve()));
      // Reset the stream mid-body, as grpc-js does when a deadline passes.
      stream.destroy();
      // The call is counted once the server has seen the reset; poll /metrics for it, within a bound.
      let added: Record<string, number> = {};
      for (let attempt = 0; attempt < 200 && Object.keys(added).length === 0; attempt++) {
        const now = await grpcCallsByCode(rpc);
        added = Object.fromEntries(Object.entries(now).filter(([code, n]) => n !== (before[code] ?? 0)).map(([code, n]) => [code, n - (before[code] ?? 0)]));
        if (Object.keys(added).length === 0) await new Promise((r) => setTimeout(r, 25));
      }
      expect(added).toEqual({ canceled: 1 });
    } finally {
      session.close();
    }
  });
});

describe("a deadline longer than a Node timer can hold is bounded, not turned into a 1 ms deadline", () => {
  // Fuzzer: gRPC framing with grpc-timeout 99999999H (seed 5): Connect armed a timer of 3.6e14 ms, Node fired it
  // after 1 ms (TimeoutOverflowWarning), and the call ended with DEADLINE_EXCEEDED.
  it.each([
    ["gRPC, grpc-timeout 99999999H", "application/grpc", { "grpc-timeout": "99999999H" }],
    ["gRPC, grpc-timeout 2147484S", "application/grpc", { "grpc-timeout": "2147484S" }],
  ])("%s: a control event stream stays open and delivers the next event", async (_name, contentType, headers) => {
    const session = http2.connect(server.baseUrl);
    try {
      const stream = session.request({ ":method": "POST", ":path": SUBSCRIBE, "content-type": contentType, te: "trailers", authorization: `Bearer ${key}`, ...headers });
      let frames = 0;
      let status: string | undefined;
      const seen = new Promise<void>((resolve) => {
        stream.on("data", () => {
          frames++;
          if (frames === 2) resolve();
        });
        stream.on("trailers", (t) => {
          status = String(t["grpc-status"]);
          resolve();
        });
        stream.on("close", () => resolve());
      });
      const opened = new Promise<void>((resolve) => stream.once("data", () => resolve()));
      stream.end(frame(0));
      await opened;
      // An event of the caller's, after `subscribed`: a live stream delivers it; one cut at 1 ms has ended.
      expect((await rest("/v2/control/remember", { session_id: "deadline", content: "an event for the stream" })).status).toBe(200);
      await seen;
      expect(status).toBeUndefined();
      expect(frames).toBeGreaterThanOrEqual(2);
      stream.close();
    } finally {
      session.close();
    }
  });
});

describe("large answers a client has not read yet do not make the HTTP/2 session refuse new calls", () => {
  // Fuzzer: after ~25,000 gRPC calls on one connection, calls failed with RESOURCE_EXHAUSTED (ENHANCE_YOUR_CALM)
  // while multi-megabyte answers (/metrics, activity exports) were in flight, and after 100 such refusals the server
  // closed the session: every call on it failed with INTERNAL (seed 100000, requests #54291, #75000, #97815).
  it("five unread 4 MB exports in flight, then a small call on the same connection is served", async () => {
    const content = "x".repeat(1_000_000);
    for (let i = 0; i < 4; i++) expect((await rest("/v2/control/remember", { session_id: "big", content: `${i} ${content}` })).status).toBe(200);
    // ExportActivityRequest { run_id: "big" } in protobuf binary.
    const exportRequest = frame(0, Buffer.from([0x0a, 0x03, ...Buffer.from("big")]));
    const session = http2.connect(server.baseUrl);
    try {
      const open = (path: string, body: Buffer): http2.ClientHttp2Stream => {
        const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key}` });
        stream.end(body);
        return stream;
      };
      // Nobody reads these streams, so past the first window the answers stay queued in the server's session.
      const exports = Array.from({ length: 5 }, () => open("/engram.v2.MemoryService/ExportActivity", exportRequest));
      await Promise.all(exports.map((s) => new Promise<void>((resolve) => s.once("response", () => resolve()))));
      const probe = open(LIVEZ, frame(0));
      const outcome = await new Promise<string>((resolve) => {
        probe.on("trailers", (t) => resolve(`grpc-status ${String(t["grpc-status"])}`));
        probe.on("error", () => resolve(`reset ${probe.rstCode}`));
        probe.on("close", () => resolve(`closed ${probe.rstCode}`));
        probe.resume();
      });
      expect(outcome).toBe("grpc-status 0");
    } finally {
      // Not a graceful close: it would wait for the unread answers.
      session.destroy();
    }
  });
});

describe("an HTTP/2 stream answered before its body was read does not stay open", () => {
  // Fuzzer: over-limit gRPC bodies on one long-lived connection (seed 100000): the server answered RESOURCE_EXHAUSTED
  // after the first 32 KB, stopped reading, and the client, held back by flow control, never finished sending; the
  // streams stayed open (70-80 s and counting) and piled up on the session. Now the rest of the body is drained.
  let small: TestServer;
  beforeAll(async () => {
    small = await startTestServer({ SERVICE_EMBEDDER: "hashed", SERVICE_MAX_REQUEST_BYTES: String(64 * 1024) });
  });
  afterAll(() => small.close());

  it("an over-limit gRPC message: RESOURCE_EXHAUSTED, then the stream closes once the client has sent the rest", async () => {
    const session = http2.connect(small.baseUrl);
    try {
      const stream = session.request({ ":method": "POST", ":path": LIVEZ, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${small.adminKey}` });
      stream.on("error", () => undefined);
      let code: string | undefined;
      stream.on("trailers", (t) => (code = String(t["grpc-status"])));
      stream.resume();
      const closed = new Promise<string>((resolve) => stream.on("close", () => resolve("closed")));
      // Far more than the flow-control window: the client can only finish if the server keeps reading.
      stream.end(frame(0, Buffer.alloc(400_000, 0x61)));
      const bound = new Promise<string>((resolve) => setTimeout(() => resolve("still open"), 8000).unref());
      expect(await Promise.race([closed, bound])).toBe("closed");
      expect(code).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
    } finally {
      session.close();
    }
  });
});
