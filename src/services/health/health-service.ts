// The unauthenticated probes: liveness, readiness, the HTTP-layer health text and Prometheus metrics.
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { HttpBodySchema, type HttpBody } from "../../../gen/google/api/httpbody_pb.js";
import { HealthService } from "../../../gen/engram/v2/health_service_pb.js";
import type { Metrics } from "../../platform/metrics.js";
import type { Readiness } from "../../platform/readiness.js";
import { HTTP_STATUS_HEADER } from "../../platform/errors.js";

const encoder = new TextEncoder();

function textBody(text: string, contentType = "text/plain; charset=utf-8"): HttpBody {
  return create(HttpBodySchema, { contentType, data: encoder.encode(text) });
}

export function healthService(readiness: Readiness, metrics: Metrics): Partial<ServiceImpl<typeof HealthService>> {
  return {
    livez: () => ({ body: textBody("ok") }),
    health: () => ({ body: textBody("OK") }),
    readyz: (_req, ctx) => {
      const reason = readiness.reason;
      if (reason === undefined) return { status: "ready", reason: "" };
      ctx.responseHeader.set(HTTP_STATUS_HEADER, "503");
      return { status: "not_ready", reason };
    },
    metrics: async () => ({ body: textBody(await metrics.registry.metrics(), metrics.registry.contentType) }),
  };
}
