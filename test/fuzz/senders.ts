// Sends one fuzzed request and reports what came back, within a time bound: HTTP/1.1 for REST and Connect (node:http,
// so paths such as `..` go out as written), @grpc/grpc-js for gRPC, raw HTTP/2 for gRPC framing. Streams are read
// up to their first event or envelope, then cancelled.
import http from "node:http";
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import type { GrpcWire, H2Wire, HttpWire } from "./requests.js";

export interface Outcome {
  /** HTTP status, when an HTTP answer came (REST, Connect, raw HTTP/2). */
  readonly status: number | undefined;
  /** gRPC status code (grpc-js, or grpc-status of a raw HTTP/2 answer). */
  readonly grpcCode: number | undefined;
  /** The snake_case code of a Connect stream's end-of-stream error. */
  readonly connectCode: string | undefined;
  readonly body: Buffer;
  readonly contentType: string;
  /** Set when no complete answer came: "timeout", or the connection error. */
  readonly error: string | undefined;
  readonly ms: number;
}

const EMPTY = Buffer.alloc(0);

function outcome(started: number, fields: Partial<Outcome>): Outcome {
  return { status: undefined, grpcCode: undefined, connectCode: undefined, body: EMPTY, contentType: "", error: undefined, ...fields, ms: performance.now() - started };
}

function errorText(e: unknown): string {
  if (e instanceof Error) return `${(e as NodeJS.ErrnoException).code ?? e.name}: ${e.message}`;
  return String(e);
}

/** The first Connect envelope of a stream, once complete: a message (ok) or the end-of-stream error. */
function firstEnvelope(bytes: Buffer): { done: boolean; code?: string } {
  if (bytes.length < 5) return { done: false };
  const length = bytes.readUInt32BE(1);
  if (bytes.length < 5 + length) return { done: false };
  const flags = bytes.readUInt8(0);
  if ((flags & 0x02) === 0) return { done: true };
  try {
    const end = JSON.parse(bytes.subarray(5, 5 + length).toString("utf8")) as { error?: { code?: string } };
    return { done: true, code: end.error?.code };
  } catch {
    return { done: true, code: "unparsable end-of-stream" };
  }
}

function sendHttpOnce(agent: http.Agent, port: number, wire: HttpWire, timeoutMs: number): Promise<Outcome & { reused: boolean }> {
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    let reused = false;
    const finish = (fields: Partial<Outcome>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome(started, fields), reused });
    };
    const headers: Record<string, string> = { ...wire.headers };
    if (wire.body.length > 0 || (wire.verb !== "GET" && wire.verb !== "DELETE")) headers["content-length"] = String(wire.body.length);
    const req = http.request({ host: "127.0.0.1", port, method: wire.verb, path: wire.path, headers, agent });
    const timer = setTimeout(() => {
      finish({ error: "timeout" });
      req.destroy();
    }, timeoutMs);
    req.on("socket", () => (reused = req.reusedSocket));
    let answered: Partial<Outcome> | undefined;
    // A reset after the answer's head arrived (the server answers 431 or 413 and closes while the request is still
    // being written) still delivered the answer.
    req.on("error", (e) => finish(answered ?? { error: errorText(e) }));
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      const status = res.statusCode;
      const contentType = String(res.headers["content-type"] ?? "");
      answered = { status, contentType };
      const streaming = status === 200 && wire.read !== "whole";
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        if (!streaming) return;
        const body = Buffer.concat(chunks);
        if (wire.read === "sse" && body.includes("data:")) {
          finish({ status, body, contentType });
          req.destroy();
        } else if (wire.read === "connect-stream") {
          const first = firstEnvelope(body);
          if (first.done) {
            finish({ status, body, contentType, connectCode: first.code });
            req.destroy();
          }
        }
      });
      res.on("end", () => {
        const body = Buffer.concat(chunks);
        finish({ status, body, contentType, connectCode: wire.read === "connect-stream" ? firstEnvelope(body).code : undefined });
      });
      res.on("error", (e) => finish(wire.read !== "whole" && status === 200 ? { status, error: `response: ${errorText(e)}` } : { status, contentType, body: Buffer.concat(chunks) }));
    });
    req.end(wire.body);
  });
}

/** A request over HTTP/1.1. A reset on a reused keep-alive socket is retried once: the server may close an idle one. */
export async function sendHttp(agent: http.Agent, port: number, wire: HttpWire, timeoutMs: number): Promise<Outcome> {
  const first = await sendHttpOnce(agent, port, wire, timeoutMs);
  if (first.error !== undefined && first.reused && first.status === undefined && /ECONNRESET|socket hang up/.test(first.error)) {
    return sendHttpOnce(agent, port, wire, timeoutMs);
  }
  return first;
}

const identity = (b: Buffer): Buffer => b;

export class GrpcSender {
  readonly #client: grpc.Client;

  constructor(port: number) {
    this.#client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      "grpc.max_receive_message_length": -1,
      "grpc.max_send_message_length": -1,
    });
  }

  send(wire: GrpcWire, timeoutMs: number): Promise<Outcome> {
    const started = performance.now();
    const metadata = new grpc.Metadata();
    if (wire.authorization !== undefined) metadata.set("authorization", wire.authorization);
    const options: grpc.CallOptions = wire.deadlineMs === undefined ? {} : { deadline: Date.now() + wire.deadlineMs };
    return new Promise((resolve) => {
      let settled = false;
      let cancel = (): void => {};
      const finish = (fields: Partial<Outcome>): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome(started, fields));
      };
      const timer = setTimeout(() => {
        finish({ error: "timeout" });
        cancel();
      }, timeoutMs);
      if (wire.streaming) {
        const call = this.#client.makeServerStreamRequest(wire.path, identity, identity, wire.message, metadata, options);
        cancel = () => call.cancel();
        call.on("data", (data: Buffer) => {
          finish({ grpcCode: grpc.status.OK, body: data });
          call.cancel();
        });
        call.on("error", (e: grpc.ServiceError) => finish({ grpcCode: e.code, body: Buffer.from(e.details ?? "") }));
        call.on("status", (s: grpc.StatusObject) => finish({ grpcCode: s.code, body: Buffer.from(s.details ?? "") }));
      } else {
        const call = this.#client.makeUnaryRequest(wire.path, identity, identity, wire.message, metadata, options, (e, value) => {
          if (e) finish({ grpcCode: e.code, body: Buffer.from(e.details ?? "") });
          else finish({ grpcCode: grpc.status.OK, body: value ?? EMPTY });
        });
        cancel = () => call.cancel();
      }
    });
  }

  close(): void {
    this.#client.close();
  }
}

/** grpc-status from a gRPC-Web body, whose trailers travel in a last envelope flagged 0x80. */
function grpcWebStatus(body: Buffer): number | undefined {
  for (let at = 0; at + 5 <= body.length; ) {
    const flags = body.readUInt8(at);
    const length = body.readUInt32BE(at + 1);
    if ((flags & 0x80) !== 0) {
      const code = /grpc-status:\s*(\d+)/i.exec(body.subarray(at + 5, at + 5 + length).toString("latin1"));
      return code === null ? undefined : Number(code[1]);
    }
    at += 5 + length;
  }
  return undefined;
}

export class H2Sender {
  readonly #origin: string;
  #session: http2.ClientHttp2Session | undefined;

  constructor(port: number) {
    this.#origin = `http://127.0.0.1:${port}`;
  }

  #open(): http2.ClientHttp2Session {
    if (this.#session === undefined || this.#session.closed || this.#session.destroyed) {
      const session = http2.connect(this.#origin);
      session.on("error", () => {});
      this.#session = session;
    }
    return this.#session;
  }

  send(wire: H2Wire, timeoutMs: number): Promise<Outcome> {
    const started = performance.now();
    return new Promise((resolve) => {
      let settled = false;
      const chunks: Buffer[] = [];
      let status: number | undefined;
      let grpcCode: number | undefined;
      let contentType = "";
      const finish = (fields: Partial<Outcome>): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const body = Buffer.concat(chunks);
        if (grpcCode === undefined && contentType.startsWith("application/grpc-web")) grpcCode = grpcWebStatus(body);
        resolve(outcome(started, { status, grpcCode, contentType, body, ...fields }));
      };
      const readCode = (headers: http2.IncomingHttpHeaders): void => {
        const code = headers["grpc-status"];
        if (code !== undefined) grpcCode = Number(code);
      };
      const stream = this.#open().request({ ":method": "POST", ":path": wire.path, ...wire.headers });
      const timer = setTimeout(() => {
        finish({ error: "timeout" });
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }, timeoutMs);
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
        contentType = String(headers["content-type"] ?? "");
        readCode(headers);
      });
      stream.on("trailers", readCode);
      stream.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        // A server stream is read to its first envelope, then cancelled.
        if (wire.streaming && firstEnvelope(Buffer.concat(chunks)).done) {
          finish({});
          stream.close(http2.constants.NGHTTP2_CANCEL);
        }
      });
      stream.on("end", () => finish({}));
      stream.on("close", () => finish(status === undefined ? { error: `stream closed (rst code ${stream.rstCode})` } : {}));
      stream.on("error", (e) => finish({ error: errorText(e) }));
      stream.end(wire.body);
    });
  }

  close(): void {
    this.#session?.close();
  }
}
