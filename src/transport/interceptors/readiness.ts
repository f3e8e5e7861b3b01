// Refuses work with UNAVAILABLE (503) until start-up is done, except the probes, which report progress.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Readiness } from "../../platform/readiness.js";

const ALWAYS_SERVED = new Set(["engram.v2.HealthService", "grpc.reflection.v1.ServerReflection"]);

export function readinessInterceptor(readiness: Readiness): Interceptor {
  return (next) => async (req) => {
    if (!readiness.ready && !ALWAYS_SERVED.has(req.service.typeName)) {
      throw new ConnectError(`not ready: ${readiness.reason ?? "starting"}; retry shortly`, Code.Unavailable);
    }
    return next(req);
  };
}
