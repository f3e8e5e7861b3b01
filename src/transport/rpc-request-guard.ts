// Checks every request message of a gRPC, gRPC-Web or Connect call before Connect decodes it. Connect reports a
// protobuf body it cannot decode as INTERNAL ("parse binary: …") and decodes JSON recursively; here both become the
// caller's INVALID_ARGUMENT, the same on every protocol. Bodies are read through bodyChunks, so a refused body never
// leaves an HTTP/1.1 connection stuck.
import { fromBinary, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope, pipe, transformSplitEnvelope, type UniversalServerRequest } from "@connectrpc/connect/protocol";
import { invalidArgument } from "../platform/errors.js";
import { boundedDeadline } from "./deadline-header.js";
import { assertJsonDepth } from "./json-depth.js";
import { isRemovedRpc } from "./removed-rpcs.js";
import { abandonBody, bodyChunks, declaredTooLarge, type NodeRequest, type NodeResponse } from "./request-body.js";

interface Framing {
  /** Messages are length-prefixed envelopes (streaming Connect, gRPC, gRPC-Web); else the body is one message. */
  readonly enveloped: boolean;
  readonly json: boolean;
  /** The envelope flag Connect skips as end-of-stream in a request: 0x02 (Connect), 0x80 (gRPC-Web), none (gRPC). */
  readonly endFlag: number;
}

const END_FLAGS: Readonly<Record<string, number>> = { connect: 0x02, "grpc-web": 0x80, grpc: 0 };

/** The framing of a content type Connect serves; undefined for others, which Connect refuses itself. */
function framingOf(contentType: string | null): Framing | undefined {
  const type = (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json") return { enveloped: false, json: true, endFlag: 0 };
  if (type === "application/proto") return { enveloped: false, json: false, endFlag: 0 };
  const streaming = /^application\/(connect|grpc|grpc-web)(?:\+(json|proto))?$/.exec(type);
  return streaming === null ? undefined : { enveloped: true, json: streaming[2] === "json", endFlag: END_FLAGS[streaming[1] as string] ?? 0 };
}

function tooLarge(maxBytes: number): ConnectError {
  return new ConnectError(`request body is larger than ${maxBytes} bytes`, Code.ResourceExhausted);
}

/** Throws INVALID_ARGUMENT when a message nests too deeply (JSON) or does not decode (protobuf binary). */
function checkMessage(method: DescMethod, json: boolean, data: Uint8Array): void {
  if (json) {
    assertJsonDepth("request", data);
    return;
  }
  try {
    fromBinary(method.input, data, { readUnknownFields: false });
  } catch (e: unknown) {
    throw invalidArgument("request", `is not a valid ${method.input.typeName} in protobuf binary (${e instanceof Error ? e.message : String(e)})`);
  }
}

async function* checkedUnary(source: AsyncIterable<Uint8Array>, check: (data: Uint8Array) => void, maxBytes: number): AsyncGenerator<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    parts.push(chunk);
  }
  const body = Buffer.concat(parts);
  check(body);
  yield body;
}

const COMPRESSED_FLAG = 0x01;

interface EnvelopeRules {
  readonly endFlag: number;
  /** The method takes exactly one request message (unary and server-streaming methods). */
  readonly single: boolean;
  /** The call declares a compression (grpc-encoding, connect-content-encoding); Connect answers for those. */
  readonly declaresCompression: boolean;
}

/**
 * Checks each envelope as Connect will read it: every envelope not flagged end-of-stream is a message. Connect answers
 * an envelope flagged compressed in a call that declares no compression with INTERNAL, and a missing or extra message
 * for a one-message method with UNIMPLEMENTED: both are the caller's malformed request, so they are INVALID_ARGUMENT.
 */
async function* checkedEnvelopes(source: AsyncIterable<Uint8Array>, check: (data: Uint8Array) => void, maxBytes: number, rules: EnvelopeRules): AsyncGenerator<Uint8Array> {
  let messages = 0;
  for await (const envelope of pipe(source, transformSplitEnvelope(maxBytes))) {
    const compressed = (envelope.flags & COMPRESSED_FLAG) === COMPRESSED_FLAG;
    if (compressed && !rules.declaresCompression) {
      throw invalidArgument("request", "a message is flagged compressed, but the call declares no compression (Engram accepts none)");
    }
    const isMessage = rules.endFlag === 0 || (envelope.flags & rules.endFlag) !== rules.endFlag;
    if (isMessage) {
      if (rules.single && ++messages > 1) throw invalidArgument("request", "this method takes exactly one message; the body holds more");
      // A compressed message is Connect's to refuse: Engram accepts no compression.
      if (!compressed) check(envelope.data);
    }
    yield encodeEnvelope(envelope.flags, envelope.data);
  }
  if (rules.single && messages === 0) throw invalidArgument("request", "this method takes exactly one message; the body holds none");
}

/** Whether a call declares a compression other than identity for its request messages. */
function declaresCompression(header: Headers): boolean {
  const encoding = header.get("grpc-encoding") ?? header.get("connect-content-encoding");
  return encoding !== null && encoding !== "" && encoding !== "identity";
}

/** An empty request message in the call's framing: what a removed RPC is handed instead of its body. */
async function* emptyMessage(framing: Framing): AsyncGenerator<Uint8Array> {
  const data = framing.json ? new TextEncoder().encode("{}") : new Uint8Array(0);
  yield framing.enveloped ? encodeEnvelope(0, data) : data;
}

/**
 * The request with its body read safely and each message checked, and its deadline bounded; a removed RPC gets an
 * empty message instead.
 */
export function guardRpcRequest(
  call: UniversalServerRequest,
  method: DescMethod,
  req: NodeRequest,
  res: NodeResponse,
  maxBytes: number,
): UniversalServerRequest {
  const bounded = boundedDeadline(call.header);
  const uReq = bounded === call.header ? call : { ...call, header: bounded };
  const framing = framingOf(uReq.header.get("content-type"));
  if (framing === undefined) return { ...uReq, body: bodyChunks(req, res) };
  if (isRemovedRpc(method)) {
    abandonBody(req, res);
    const header = new Headers(uReq.header);
    header.delete("content-length");
    return { ...uReq, header, body: emptyMessage(framing) };
  }
  // A Connect unary body over the limit by its declared length is refused without reading it.
  if (!framing.enveloped && declaredTooLarge(req, maxBytes)) abandonBody(req, res);
  // A compressed unary body is Connect's to refuse (Engram accepts no compression); it is not checked here.
  const encoding = uReq.header.get("content-encoding");
  const check = (data: Uint8Array): void => checkMessage(method, framing.json, data);
  const source = bodyChunks(req, res);
  if (framing.enveloped) {
    const rules = { endFlag: framing.endFlag, single: method.methodKind === "unary" || method.methodKind === "server_streaming", declaresCompression: declaresCompression(uReq.header) };
    return { ...uReq, body: checkedEnvelopes(source, check, maxBytes, rules) };
  }
  if (encoding !== null && encoding !== "identity") return { ...uReq, body: source };
  return { ...uReq, body: checkedUnary(source, check, maxBytes) };
}
