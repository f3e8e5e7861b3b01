// Per-call facts the transport layer knows and the interceptors report: which transport carried the call, and the
// rate-limit charge it made (call-admission.ts).
import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../auth/principal.js";

export type TransportName = "http" | "connect" | "grpc" | "grpc-web";

/** Set by the HTTP/JSON gateway on the calls it dispatches in-process. */
export const viaGatewayKey = createContextKey<boolean>(false, { description: "dispatched by the HTTP gateway" });

export function transportOf(contentType: string | null, viaGateway: boolean): TransportName {
  if (viaGateway) return "http";
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** A call the transport authenticated and charged: the interceptors take its principal and fields from here. */
export interface AdmittedCall {
  readonly principal: Principal;
  /** The rate-limit response fields (see interceptors/rate-limit.ts). */
  readonly fields: readonly [string, string][];
  /** What the call is told when it is refused; undefined when it is admitted. */
  readonly refusal: string | undefined;
}

export const admittedCallKey = createContextKey<AdmittedCall | undefined>(undefined, { description: "charged by the transport" });
