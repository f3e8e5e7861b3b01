// Outermost interceptor: one log line and one metrics observation per RPC, with route, code, duration and key id.
// Calls the transport refuses before dispatch are recorded the same way, by the same recorder.
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { DescMethod } from "@bufbuild/protobuf";
import type { Logger } from "../../platform/logger.js";
import type { Metrics } from "../../platform/metrics.js";
import { codeName, internal } from "../../platform/errors.js";
import { principalKey } from "../../auth/principal.js";
import { routeLabelOf } from "../gateway/http-rule.js";
import { transportOf, viaGatewayKey, type TransportName } from "../call-context.js";

/** The call a log line and a metrics observation describe. */
export interface ObservedCall {
  readonly method: DescMethod;
  readonly transport: TransportName;
  readonly keyId: string | undefined;
  /** process.hrtime.bigint() when the call arrived. */
  readonly started: bigint;
}

/** Records finished calls: the observe interceptor's, and those the transport answers itself (rate-limit refusals). */
export type CallRecorder = (call: ObservedCall, code: Code | 0, error?: { readonly message: string; readonly cause?: unknown }) => void;

export function callRecorder(logger: Logger, metrics: Metrics): CallRecorder {
  const routes = new Map<DescMethod, string>();
  const routeOf = (method: DescMethod): string => {
    let route = routes.get(method);
    if (route === undefined) {
      route = routeLabelOf(method);
      routes.set(method, route);
    }
    return route;
  };
  return (call, code, error) => {
    const seconds = Number(process.hrtime.bigint() - call.started) / 1e9;
    const codeLabel = code === 0 ? "ok" : codeName(code);
    const labels = { route: routeOf(call.method), rpc: `${call.method.parent.typeName}/${call.method.name}`, transport: call.transport, code: codeLabel };
    metrics.rpcRequests.inc(labels);
    metrics.rpcDuration.observe(labels, seconds);
    const line = { ...labels, duration_ms: Math.round(seconds * 1e6) / 1e3, key_id: call.keyId };
    if (error === undefined) logger.info(line, "rpc");
    else if (code === Code.Internal || code === Code.Unknown) logger.error({ ...line, err: error.cause ?? error }, error.message);
    else logger.info({ ...line, error: error.message }, "rpc");
  };
}

export function observeInterceptor(record: CallRecorder): Interceptor {
  return (next) => async (req) => {
    const started = process.hrtime.bigint();
    const transport = transportOf(req.header.get("content-type"), req.contextValues.get(viaGatewayKey));
    const observed = (): ObservedCall => ({ method: req.method, transport, keyId: req.contextValues.get(principalKey)?.keyId, started });
    try {
      const res = await next(req);
      // Server streams finish when the stream does; they are counted when they open.
      record(observed(), 0);
      return res;
    } catch (e: unknown) {
      // Anything that is not a ConnectError is a bug: callers get a generic message, the log gets the cause.
      const error = e instanceof ConnectError ? e : internal(e);
      record(observed(), error.code, error);
      throw error;
    }
  };
}
