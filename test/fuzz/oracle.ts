// Decides whether an answer breaks a rule: no 5xx or INTERNAL/UNKNOWN/DATA_LOSS (beyond the documented 501/503), no
// hang, no dropped connection, no success without a valid key, the error body's shape, and no victim canary or
// key secret in any answer.
import { status as GrpcStatus } from "@grpc/grpc-js";
import { isRemovedRpc } from "../../src/transport/removed-rpcs.js";
import { grpcCodeName } from "./describe.js";
import type { FuzzRequest } from "./requests.js";
import type { Outcome } from "./senders.js";

/** Methods that answer without a key. */
const UNAUTHENTICATED = new Set(["engram.v2.HealthService"]);
const BAD_KEYS = new Set(["none", "malformed", "revoked"]);

export interface Secrets {
  /** Text only the victim's own answers may hold. */
  readonly canary: string;
  /** Key secrets: no answer may hold one (no fuzzed call creates or rotates a key it is shown). */
  readonly secrets: readonly string[];
}

/** Whether the request declares a compression: the gRPC and Connect protocols answer UNIMPLEMENTED to one not served. */
function declaresCompression(request: FuzzRequest): boolean {
  if (request.wire.kind === "grpc") return false;
  const { headers } = request.wire;
  return [headers["grpc-encoding"], headers["content-encoding"], headers["connect-content-encoding"]].some((e) => e !== undefined && e !== "identity");
}

/** The 5xx answers the contract (or the protocol) documents for a request, by transport. */
function documented5xx(request: FuzzRequest): { http: readonly number[]; grpc: readonly number[] } {
  const { method } = request;
  const deadline = request.clientDeadline ? { http: [504], grpc: [GrpcStatus.DEADLINE_EXCEEDED] } : { http: [], grpc: [] };
  if (declaresCompression(request)) return { http: [501, ...deadline.http], grpc: [GrpcStatus.UNIMPLEMENTED, ...deadline.grpc] };
  // Removed RPCs: 410 over HTTP, UNIMPLEMENTED (501) over Connect and gRPC.
  if (isRemovedRpc(method)) return { http: [501, ...deadline.http], grpc: [GrpcStatus.UNIMPLEMENTED, ...deadline.grpc] };
  // Readyz answers 503 while the server warms up.
  if (method.parent.typeName === "engram.v2.HealthService" && method.name === "Readyz") return { http: [503, ...deadline.http], grpc: [GrpcStatus.UNAVAILABLE, ...deadline.grpc] };
  return deadline;
}

const SERVER_FAULTS = new Set([GrpcStatus.UNKNOWN, GrpcStatus.INTERNAL, GrpcStatus.DATA_LOSS, GrpcStatus.UNIMPLEMENTED, GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED]);
const CONNECT_FAULTS = new Set(["unknown", "internal", "data_loss", "unimplemented", "unavailable", "deadline_exceeded", "unparsable end-of-stream"]);
const CONNECT_CODE_NUMBERS: Readonly<Record<string, number>> = { unimplemented: 12, unavailable: 14, deadline_exceeded: 4 };

/** Why the answer breaks a rule, or undefined when it does not. */
export function judge(request: FuzzRequest, outcome: Outcome, secrets: Secrets): string | undefined {
  if (outcome.error === "timeout") return `hang: no answer within the bound (${Math.round(outcome.ms)} ms)`;
  if (outcome.error !== undefined) {
    // Over the size limit the server may answer and close while the body is still being written.
    if (request.overLimit && /ECONNRESET|EPIPE|socket hang up/.test(outcome.error)) return undefined;
    return `connection failed: ${outcome.error}`;
  }
  const allowed = documented5xx(request);
  if (outcome.status !== undefined && outcome.status >= 500 && !allowed.http.includes(outcome.status)) return `HTTP ${outcome.status}`;
  if (outcome.grpcCode !== undefined && SERVER_FAULTS.has(outcome.grpcCode) && !allowed.grpc.includes(outcome.grpcCode)) return `gRPC ${grpcCodeName(outcome.grpcCode)}`;
  if (outcome.connectCode !== undefined && CONNECT_FAULTS.has(outcome.connectCode) && !allowed.grpc.includes(CONNECT_CODE_NUMBERS[outcome.connectCode] ?? -1)) {
    return `Connect stream error ${outcome.connectCode}`;
  }
  // A server stream read to its first message was cancelled before its status; every other gRPC answer has one.
  if (request.wire.kind === "h2" && !request.wire.streaming && outcome.status === 200 && outcome.grpcCode === undefined) return "gRPC answer without grpc-status";
  const succeeded = outcome.grpcCode === undefined ? outcome.status !== undefined && outcome.status < 300 && outcome.connectCode === undefined : outcome.grpcCode === GrpcStatus.OK;
  if (succeeded && BAD_KEYS.has(request.keyKind) && !UNAUTHENTICATED.has(request.method.parent.typeName)) return `succeeded with a ${request.keyKind} key`;
  if (request.wire.kind === "http" && outcome.status !== undefined && outcome.status >= 400 && outcome.contentType.startsWith("application/json")) {
    try {
      const body = JSON.parse(outcome.body.toString("utf8")) as { code?: unknown; message?: unknown };
      if (typeof body.code !== "string" || typeof body.message !== "string") return "error body without a string code and message";
    } catch {
      return "error body is not JSON";
    }
  }
  const text = outcome.body.toString("utf8");
  if (text.includes(secrets.canary)) return "answer holds the victim's data";
  for (const secret of secrets.secrets) if (text.includes(secret)) return "answer holds an API key secret";
  return undefined;
}
