// Per-call facts the transport layer knows and the interceptors report: which transport carried the call.
import { createContextKey } from "@connectrpc/connect";

export type TransportName = "http" | "connect" | "grpc" | "grpc-web";

/** Set by the HTTP/JSON gateway on the calls it dispatches in-process. */
export const viaGatewayKey = createContextKey<boolean>(false, { description: "dispatched by the HTTP gateway" });

export function transportOf(contentType: string | null, viaGateway: boolean): TransportName {
  if (viaGateway) return "http";
  if (contentType?.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType?.startsWith("application/grpc")) return "grpc";
  return "connect";
}
