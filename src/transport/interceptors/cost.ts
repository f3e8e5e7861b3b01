// Meters what each authenticated RPC spends on external providers (LLM, embeddings): the call runs inside its own
// cost meter, charged to the caller's key in /metrics as it goes; its answer carries the totals in the `engram-cost`
// header (gRPC: header metadata) and, on the responses that have one, in the `cost` field.
import type { DescMethod } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { CostSchema, type Cost as CostMessage } from "../../../gen/engram/v2/cost_pb.js";
import { costMessage } from "../../services/cost-message.js";
import { principalKey } from "../../auth/principal.js";
import { COST_HEADER, CostMeter, costHeaderValue, metered } from "../../platform/cost-meter.js";
import { providerCostSink, type Metrics } from "../../platform/metrics.js";
import { internal } from "../../platform/errors.js";

/** The response's `cost` field when the method's output has one of type engram.v2.Cost (cached per method). */
function costFieldOf(cache: Map<DescMethod, boolean>, method: DescMethod): boolean {
  let has = cache.get(method);
  if (has === undefined) {
    has = method.output.fields.some((f) => f.localName === "cost" && f.message?.typeName === CostSchema.typeName);
    cache.set(method, has);
  }
  return has;
}

export function costInterceptor(metrics: Pick<Metrics, "providerCalls" | "providerTokens" | "providerSeconds">): Interceptor {
  const withCostField = new Map<DescMethod, boolean>();
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    // Public probes never reach a provider; streams answer their header before their work is done.
    if (principal === undefined || req.stream) return next(req);
    const meter = new CostMeter(providerCostSink(metrics, principal.keyId));
    try {
      const res = await metered(meter, () => next(req));
      // A call forwarded to the node serving the caller's shard (clustered mode) comes back with that node's cost in
      // its header and field: the work, and the provider calls, were done there.
      if (!res.stream && !res.header.has(COST_HEADER)) {
        const cost = meter.totals;
        if (costFieldOf(withCostField, req.method)) (res.message as { cost?: CostMessage }).cost = costMessage(cost);
        res.header.set(COST_HEADER, costHeaderValue(cost));
      }
      return res;
    } catch (e: unknown) {
      // A failed call may have spent too (a provider that refused, or answered before a later step failed). Anything
      // not a ConnectError becomes the generic internal error here rather than in the observe interceptor, with the
      // same cause kept for the log.
      const error = e instanceof ConnectError ? e : internal(e);
      if (!error.metadata.has(COST_HEADER)) error.metadata.set(COST_HEADER, costHeaderValue(meter.totals));
      throw error;
    }
  };
}
