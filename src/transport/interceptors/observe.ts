// Outermost interceptor: one log line and one metrics observation per RPC, with route, code, duration and key id.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { DescMethod } from "@bufbuild/protobuf";
import type { Logger } from "../../platform/logger.js";
import type { Metrics } from "../../platform/metrics.js";
import { codeName, internal } from "../../platform/errors.js";
import { principalKey } from "../../auth/principal.js";
import { routeLabelOf } from "../gateway/http-rule.js";
import { transportOf, viaGatewayKey } from "../call-context.js";

export function observeInterceptor(logger: Logger, metrics: Metrics): Interceptor {
  const routes = new Map<DescMethod, string>();
  const routeOf = (method: DescMethod): string => {
    let route = routes.get(method);
    if (route === undefined) {
      route = routeLabelOf(method);
      routes.set(method, route);
    }
    return route;
  };
  return (next) => async (req) => {
    const started = process.hrtime.bigint();
    const route = routeOf(req.method);
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const transport = transportOf(req.header.get("content-type"), req.contextValues.get(viaGatewayKey));
    const finish = (code: Code | 0, error?: ConnectError): void => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const codeLabel = code === 0 ? "ok" : codeName(code);
      const labels = { route, rpc, transport, code: codeLabel };
      metrics.rpcRequests.inc(labels);
      metrics.rpcDuration.observe(labels, seconds);
      const line = {
        route,
        rpc,
        transport,
        code: codeLabel,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        key_id: req.contextValues.get(principalKey)?.keyId,
      };
      if (error === undefined) logger.info(line, "rpc");
      else if (code === Code.Internal || code === Code.Unknown) logger.error({ ...line, err: error.cause ?? error }, error.message);
      else logger.info({ ...line, error: error.message }, "rpc");
    };
    try {
      const res = await next(req);
      // Server streams finish when the stream does; they are counted when they open.
      finish(0);
      return res;
    } catch (e: unknown) {
      // Anything that is not a ConnectError is a bug: callers get a generic message, the log gets the cause.
      const error = e instanceof ConnectError ? e : internal(e);
      finish(error.code, error);
      throw error;
    }
  };
}
