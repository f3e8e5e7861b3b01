// The answer to a gRPC, gRPC-Web or Connect call the transport refuses before Connect reads it (a rate-limit refusal,
// call-admission.ts), in the call's own protocol and as Connect itself would write it: an error status with its
// metadata. It is built without a ConnectError, whose stack trace is most of a refusal's cost under abuse.
import type { Code } from "@connectrpc/connect";
import { codeToHttpStatus, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { encodeEnvelope, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeName } from "../platform/errors.js";

export interface Refusal {
  readonly code: Code;
  readonly message: string;
  /** Metadata the refusal carries (rate-limit fields): headers, trailers or end-of-stream metadata by protocol. */
  readonly fields: readonly [string, string][];
}

const encoder = new TextEncoder();

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/** The refusal for a call whose request has `contentType` (a GET, with none, is Connect unary). */
export function rpcRefusal(contentType: string | undefined, refusal: Refusal): UniversalServerResponse {
  const type = (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
  const status = new Headers([
    ["grpc-status", String(refusal.code)],
    // Percent-encoded as gRPC asks; the router re-encodes it to the spec's narrower rule like every other answer.
    ["grpc-message", encodeURIComponent(refusal.message)],
  ]);
  if (type.startsWith("application/grpc-web")) {
    // Trailers-only: the status travels in the headers, with no body.
    const header = new Headers([["content-type", type], ...refusal.fields]);
    for (const [name, value] of status) header.set(name, value);
    return { status: 200, header, body: once(new Uint8Array(0)) };
  }
  if (type.startsWith("application/grpc")) {
    const trailer = new Headers(refusal.fields as [string, string][]);
    for (const [name, value] of status) trailer.set(name, value);
    return { status: 200, header: new Headers([["content-type", type]]), body: once(new Uint8Array(0)), trailer };
  }
  const error = { code: codeName(refusal.code), message: refusal.message };
  if (type.startsWith("application/connect+")) {
    // A Connect stream ends with a message flagged end-of-stream that carries the error and the metadata.
    const metadata = Object.fromEntries(refusal.fields.map(([name, value]) => [name, [value]]));
    const endStream = encodeEnvelope(endStreamFlag, encoder.encode(JSON.stringify({ error, metadata })));
    return { status: 200, header: new Headers([["content-type", type]]), body: once(endStream) };
  }
  const header = new Headers([["content-type", "application/json"], ...refusal.fields]);
  return { status: codeToHttpStatus(refusal.code), header, body: once(encoder.encode(JSON.stringify(error))) };
}
