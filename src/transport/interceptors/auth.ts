// Authenticates every RPC except the public probes and puts the caller in the context values.
import type { Interceptor } from "@connectrpc/connect";
import type { Authenticator } from "../../auth/authenticator.js";
import { principalKey } from "../../auth/principal.js";
import { admittedCallKey } from "../call-context.js";

/** Services served without an API key: the health probes and gRPC reflection. */
export const PUBLIC_SERVICES: ReadonlySet<string> = new Set(["engram.v2.HealthService", "grpc.reflection.v1.ServerReflection"]);

export function authInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (!PUBLIC_SERVICES.has(req.service.typeName)) {
      // A call the transport charged was authenticated there, from the same header.
      const principal = req.contextValues.get(admittedCallKey)?.principal ?? authenticator.authenticate(req.header.get("authorization"));
      req.contextValues.set(principalKey, principal);
    }
    return next(req);
  };
}
