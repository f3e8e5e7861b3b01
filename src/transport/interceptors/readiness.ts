// Refuses work with UNAVAILABLE (503) until start-up is done, except the probes, which report progress. During a
// shutdown the transport refuses requests that arrive after it began (see one-port-server.ts): those admitted before
// it pass here and finish.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Readiness } from "../../platform/readiness.js";

const ALWAYS_SERVED = new Set(["engram.v2.HealthService", "grpc.reflection.v1.ServerReflection"]);

export function readinessInterceptor(readiness: Readiness): Interceptor {
  return (next) => async (req) => {
    if (readiness.starting && !ALWAYS_SERVED.has(req.service.typeName)) {
      throw new ConnectError(`not ready: ${readiness.reason ?? "starting"}; retry shortly`, Code.Unavailable);
    }
    return next(req);
  };
}
