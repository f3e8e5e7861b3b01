// How a request and its answer are written in reports: the bytes as sent (text where it is UTF-8, else base64), with
// the keys' secrets masked, and the key each answer is counted under.
import { status as GrpcStatus } from "@grpc/grpc-js";
import { describeBody } from "./json-text.js";
import type { Keys } from "./keys.js";
import type { FuzzRequest } from "./requests.js";
import type { Outcome } from "./senders.js";

export function grpcCodeName(code: number): string {
  return String(Object.entries(GrpcStatus).find(([, v]) => v === code)?.[0] ?? code);
}

/** The key a request's answer is counted under: "rest 200", "connect 200/invalid_argument", "grpc NOT_FOUND", "grpc-h2 200/3". */
export function statusKey(request: FuzzRequest, outcome: Outcome): string {
  const wire = request.wire.kind === "h2" ? "grpc-h2" : request.transport;
  if (outcome.error !== undefined) return `${wire} error`;
  if (request.wire.kind === "grpc") return `${wire} ${grpcCodeName(outcome.grpcCode ?? -1)}`;
  if (request.wire.kind === "h2") return `${wire} ${outcome.status}/${outcome.grpcCode ?? "-"}`;
  return `${wire} ${outcome.status}${outcome.connectCode !== undefined ? `/${outcome.connectCode}` : ""}`;
}

function binaryText(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString("base64");
  return text.length > 2000 ? `${text.slice(0, 2000)}… (${bytes.byteLength} bytes)` : text;
}

/** The request as sent, with the keys' secrets replaced by the key's kind: reports are printed and kept. */
export function describeRequest(request: FuzzRequest, keys: Keys): string {
  let text = describeWire(request);
  for (const [kind, key] of Object.entries(keys)) text = text.split(key).join(`<${kind} key>`);
  return text;
}

function describeWire(request: FuzzRequest): string {
  const { wire } = request;
  switch (wire.kind) {
    case "http":
      return `${wire.verb} ${wire.path.length > 300 ? `${wire.path.slice(0, 300)}…` : wire.path}\n${JSON.stringify(wire.headers)}\n${describeBody(wire.body)}`;
    case "grpc":
      return `gRPC ${wire.path} authorization=${wire.authorization ?? "none"} deadlineMs=${wire.deadlineMs ?? "none"}\nbase64:${binaryText(wire.message)}`;
    case "h2":
      return `HTTP/2 POST ${wire.path}\n${JSON.stringify(wire.headers)}\nbase64:${binaryText(wire.body)}`;
  }
}

export function describeOutcome(outcome: Outcome): string {
  return `status=${outcome.status ?? "-"} grpc=${outcome.grpcCode ?? "-"} connect=${outcome.connectCode ?? "-"} error=${outcome.error ?? "-"} ms=${Math.round(outcome.ms)}\n${describeBody(outcome.body, 400)}`;
}
