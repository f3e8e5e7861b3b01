// One fuzzed request, from its seed and index: which RPC, transport and key, the message and its mutation, and the
// exact bytes to send — a REST route built from the method's google.api.http rule as the gateway reads it, a
// Connect call, or a gRPC call (through @grpc/grpc-js, or raw HTTP/2 when the framing itself is fuzzed).
import type { DescMethod } from "@bufbuild/protobuf";
import { bindingsOf } from "../../src/transport/gateway/http-rule.js";
import { badFraming, corruptBinary, envelope, toBinaryOrUndefined } from "./binary.js";
import { encodeJson, RawJson, type FuzzJson, type FuzzObject } from "./json-text.js";
import { authorization, KEY_KINDS, type KeyKind, type Keys } from "./keys.js";
import { mutate, MUTATIONS, wellTyped, type GenContext, type Mutation } from "./messages.js";
import type { Rng } from "./prng.js";
import { invalidUtf8Literal } from "./values.js";

export type Transport = "rest" | "connect" | "grpc";
export const TRANSPORTS: readonly Transport[] = ["rest", "connect", "grpc"];

/** A request over HTTP/1.1: REST, Connect, or a Connect stream. */
export interface HttpWire {
  readonly kind: "http";
  readonly verb: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** How to read a 200: one SSE event, one Connect envelope, or the whole body. */
  readonly read: "sse" | "connect-stream" | "whole";
}

/** A gRPC call through @grpc/grpc-js with a raw message body. */
export interface GrpcWire {
  readonly kind: "grpc";
  readonly path: string;
  readonly message: Buffer;
  readonly authorization: string | undefined;
  readonly deadlineMs: number | undefined;
  readonly streaming: boolean;
}

/** A gRPC call over raw HTTP/2, for framing and headers grpc-js would never send. */
export interface H2Wire {
  readonly kind: "h2";
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  readonly streaming: boolean;
}

export type Wire = HttpWire | GrpcWire | H2Wire;

export type Variation = Mutation | "raw_body" | "binary_corrupt" | "framing";

export interface FuzzRequest {
  readonly index: number;
  readonly method: DescMethod;
  readonly transport: Transport;
  readonly keyKind: KeyKind;
  readonly variation: Variation;
  /** The body is meant to exceed SERVICE_MAX_REQUEST_BYTES (the server may then close the connection). */
  readonly overLimit: boolean;
  /** The caller set a deadline, so DEADLINE_EXCEEDED is a fair answer. */
  readonly clientDeadline: boolean;
  readonly wire: Wire;
}

/**
 * Methods an admin key is fuzzed on: user reads and creation, storage statistics, and compaction (which swaps the
 * data file under the writes in flight). None touches the victim's key or records.
 */
const ADMIN_METHODS = new Set(["AuthService/ListUsers", "AuthService/GetUser", "AuthService/CreateUser", "CoreService/GetStorageStats", "CoreService/TriggerCompaction"]);

function scalarText(value: FuzzJson): string {
  if (typeof value === "string") return value;
  if (value instanceof RawJson) return Buffer.from(value.fragment).toString("latin1");
  if (typeof value === "object" && value !== null) return encodeJson(value).toString("utf8");
  return String(value);
}

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) UTF-8 bytes instead of a thrown URIError. */
function encodeComponent(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.split("").map((ch) => (/[\ud800-\udfff]/.test(ch) ? "%ED%A0%80" : encodeURIComponent(ch))).join("");
  }
}

const PATH_SPECIALS = ["..", ".", "%2F", "a%2Fb", "%2e%2e", "%2E%2E%2F%2E%2E", "%", "%ZZ", "%00", "%FF", "%ED%A0%80", "%F0%9F%9A%80", "x".repeat(3000), "a;b", "a:b", "*", "~"];

function pathValue(json: FuzzObject, method: DescMethod, name: string, ctx: GenContext): string {
  const field = method.input.fields.find((f) => f.name === name);
  let value: FuzzJson | undefined;
  if (field !== undefined) {
    value = json[field.name] ?? json[field.jsonName];
    delete json[field.name];
    delete json[field.jsonName];
  }
  if (ctx.rng.chance(0.12)) return ctx.rng.pick(PATH_SPECIALS);
  const text = value === undefined || value === null ? String(ctx.pool.draw(ctx.rng, name) ?? "x") : scalarText(value);
  return encodeComponent(text);
}

function queryString(json: FuzzObject, rng: Rng): string {
  const params: string[] = [];
  for (const [name, value] of Object.entries(json)) {
    if (Array.isArray(value) && rng.chance(0.6)) for (const item of value.slice(0, 50)) params.push(`${encodeComponent(name)}=${encodeComponent(scalarText(item))}`);
    else params.push(`${encodeComponent(name)}=${encodeComponent(scalarText(value))}`);
  }
  if (rng.chance(0.08)) params.push(rng.pick(["zz=1", "a", "%ZZ=1", "a=%", "=", "&&", "run_id=a&run_id=b", "__proto__=1"]));
  return params.length === 0 ? "" : `?${params.join("&")}`;
}

/** A JSON body that is not quite a JSON object: cut, prefixed, trailed, not an object, not UTF-8. */
function rawBody(rng: Rng, good: Buffer): Buffer {
  switch (rng.int(10)) {
    case 0:
      return Buffer.alloc(0);
    case 1:
      return Buffer.from(rng.pick(["null", "[]", '"s"', "1", "true", "[{}]", " ", "\n\n"]));
    case 2:
      return good.subarray(0, rng.int(good.length));
    case 3:
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), good]);
    case 4:
      return Buffer.concat([good, Buffer.from(rng.pick(["}", "}}", "garbage", "\u0000", ",{}"]))]);
    case 5:
      return Buffer.from(rng.pick(['{"a":1,"a":2}', '{"run_id":"a","run_id":"b"}', "{'a':1}", '{"a":NaN}', '{"a":1e400}', '{"a":-}', '{"a":01}', '{"a":"\\x41"}', '{"a":"\\u12"}']));
    case 6:
      return encodeJson({ x: invalidUtf8Literal(rng) });
    case 7:
      return Buffer.from(rng.bytes(rng.int(200)));
    case 8:
      return Buffer.from(good.toString("utf8").replace(/"/, "'"));
    default:
      return Buffer.from(`${"[".repeat(100_000)}`);
  }
}

function contentType(rng: Rng, normal: string): string | undefined {
  return rng.weighted<string | undefined>([
    [normal, 88], [undefined, 3], ["text/plain", 2], [`${normal}; charset=latin1`, 2], ["application/x-www-form-urlencoded", 2], ["multipart/form-data; boundary=x", 1], ["*/*", 2],
  ]);
}

function headers(auth: string | undefined, extra: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  if (auth !== undefined) out["authorization"] = auth;
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) out[name] = value;
  return out;
}

function restWire(method: DescMethod, json: FuzzObject, body: Buffer | undefined, auth: string | undefined, ctx: GenContext): HttpWire {
  const { rng } = ctx;
  const binding = rng.pick(bindingsOf(method));
  const path = binding.segments.map((s) => `/${"literal" in s ? s.literal : pathValue(json, method, s.variable, ctx)}`).join("");
  const streaming = method.methodKind === "server_streaming";
  const read = streaming ? "sse" : "whole";
  if (binding.body === "") {
    return { kind: "http", verb: binding.verb, path: `${path}${queryString(json, rng)}`, headers: headers(auth, {}), body: Buffer.alloc(0), read };
  }
  return { kind: "http", verb: binding.verb, path, headers: headers(auth, { "content-type": contentType(rng, "application/json") }), body: body ?? encodeJson(json), read };
}

function connectWire(method: DescMethod, json: FuzzObject, body: Buffer | undefined, auth: string | undefined, ctx: GenContext): { wire: HttpWire; clientDeadline: boolean } {
  const { rng } = ctx;
  const path = `/${method.parent.typeName}/${method.name}`;
  const binary = body === undefined && rng.chance(0.2) ? toBinaryOrUndefined(method.input, json) : undefined;
  const data = binary !== undefined ? Buffer.from(rng.chance(0.3) ? corruptBinary(rng, method.input, binary) : binary) : (body ?? encodeJson(json));
  const timeout = rng.chance(0.04) ? rng.pick(["1", "0", "-1", "abc", "99999999999", "9999999999", "2147483648", "10000", "1.5"]) : undefined;
  const clientDeadline = timeout !== undefined && /^\d+$/.test(timeout) && Number(timeout) < 10_000;
  const encoding = rng.chance(0.03) ? rng.pick(["gzip", "br", "identity", "x"]) : undefined;
  if (method.methodKind === "server_streaming") {
    const type = binary !== undefined ? "application/connect+proto" : "application/connect+json";
    const streamHeaders = headers(auth, { "content-type": type, "connect-protocol-version": "1", "connect-timeout-ms": timeout, "connect-content-encoding": encoding });
    return { wire: { kind: "http", verb: "POST", path, headers: streamHeaders, body: rng.chance(0.1) ? badFraming(rng, data) : envelope(data), read: "connect-stream" }, clientDeadline };
  }
  const type = binary !== undefined ? "application/proto" : contentType(rng, "application/json");
  const version = rng.chance(0.95) ? "1" : rng.pick(["2", "", "x"]);
  const unaryHeaders = headers(auth, { "content-type": type, "connect-protocol-version": version, "connect-timeout-ms": timeout, "content-encoding": encoding });
  return { wire: { kind: "http", verb: "POST", path, headers: unaryHeaders, body: data, read: "whole" }, clientDeadline };
}

function grpcWire(method: DescMethod, json: FuzzObject, variation: Variation, auth: string | undefined, ctx: GenContext): { wire: GrpcWire | H2Wire; variation: Variation; clientDeadline: boolean } {
  const { rng } = ctx;
  const path = `/${method.parent.typeName}/${method.name}`;
  // A mutation protobuf JSON refuses has no binary form: the well-typed message goes instead.
  const encoded = toBinaryOrUndefined(method.input, json) ?? toBinaryOrUndefined(method.input, wellTyped(method.input, ctx)) ?? new Uint8Array(0);
  if (variation === "framing") {
    const json = rng.chance(0.3);
    const data = json ? encodeJson(wellTyped(method.input, ctx)) : encoded;
    const timeout = rng.chance(0.2) ? rng.pick(["1S", "0n", "abc", "99999999H", "2147484S", "9999999M", "1m", "100000000S", ""]) : undefined;
    const h2Headers = headers(auth, {
      "content-type": json ? "application/grpc+json" : rng.pick(["application/grpc", "application/grpc+proto", "application/grpc-web", "application/grpc+xml"]),
      te: rng.chance(0.9) ? "trailers" : undefined,
      "grpc-timeout": timeout,
      "grpc-encoding": rng.chance(0.1) ? rng.pick(["gzip", "snappy", "identity"]) : undefined,
    });
    const body = rng.chance(0.6) ? badFraming(rng, data) : envelope(data);
    return { wire: { kind: "h2", path, headers: h2Headers, body, streaming: method.methodKind === "server_streaming" }, variation, clientDeadline: grpcTimeoutMs(timeout) < 10_000 };
  }
  const corrupt = variation === "binary_corrupt";
  const message = Buffer.from(corrupt ? corruptBinary(rng, method.input, encoded) : encoded);
  const deadlineMs = rng.chance(0.03) ? rng.pick([1, 5, 50]) : undefined;
  return {
    wire: { kind: "grpc", path, message, authorization: auth, deadlineMs, streaming: method.methodKind === "server_streaming" },
    variation,
    clientDeadline: deadlineMs !== undefined,
  };
}

/** A grpc-timeout header's deadline in ms; Infinity when absent or malformed (the server then sets none). */
function grpcTimeoutMs(value: string | undefined): number {
  const match = /^(\d{1,8})([HMSmun])$/.exec(value ?? "");
  if (match === null) return Infinity;
  const unit: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };
  return Number(match[1]) * (unit[match[2] as string] ?? 1);
}

/** Request `index`: the method and transport cycle so every pair comes up within methods × 3 requests. */
export function buildRequest(index: number, methods: readonly DescMethod[], keys: Keys, ctx: GenContext): FuzzRequest {
  const { rng } = ctx;
  const method = methods[index % methods.length] as DescMethod;
  const transport = TRANSPORTS[Math.floor(index / methods.length) % TRANSPORTS.length] as Transport;
  let keyKind = rng.weighted(KEY_KINDS);
  if (keyKind === "admin" && !ADMIN_METHODS.has(`${method.parent.name}/${method.name}`)) keyKind = "fuzz";
  const auth = authorization(keyKind, keys, rng);
  const json = wellTyped(method.input, ctx);
  let variation: Variation = rng.weighted(MUTATIONS);
  let overLimit = false;
  if (transport !== "grpc" && rng.chance(0.06)) variation = "raw_body";
  if (transport === "grpc" && rng.chance(0.12)) variation = rng.chance(0.6) ? "binary_corrupt" : "framing";
  if (variation !== "raw_body" && variation !== "binary_corrupt" && variation !== "framing") overLimit = mutate(json, method.input, variation, ctx).overLimit;
  const body = variation === "raw_body" ? rawBody(rng, encodeJson(json)) : undefined;
  switch (transport) {
    case "rest":
      return { index, method, transport, keyKind, variation, overLimit, clientDeadline: false, wire: restWire(method, json, body, auth, ctx) };
    case "connect": {
      const { wire, clientDeadline } = connectWire(method, json, body, auth, ctx);
      return { index, method, transport, keyKind, variation, overLimit, clientDeadline, wire };
    }
    case "grpc": {
      const built = grpcWire(method, json, variation, auth, ctx);
      return { index, method, transport, keyKind, variation: built.variation, overLimit, clientDeadline: built.clientDeadline, wire: built.wire };
    }
  }
}
