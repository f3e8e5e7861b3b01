// A meter's totals as the proto `Cost` message (engram/v2/cost.proto): what responses carry in `cost`/`job_cost`.
import { create } from "@bufbuild/protobuf";
import { CostSchema, ProviderCostSchema, type Cost as CostMessage, type ProviderCost as ProviderCostMessage } from "../../gen/engram/v2/cost_pb.js";
import type { Cost, ProviderCost } from "../platform/cost-meter.js";

function providerMessage(cost: ProviderCost): ProviderCostMessage {
  return create(ProviderCostSchema, { calls: cost.calls, inputTokens: cost.inputTokens, outputTokens: cost.outputTokens, ms: Math.round(cost.ms) });
}

export function costMessage(cost: Cost): CostMessage {
  return create(CostSchema, { llm: providerMessage(cost.llm), embeddings: providerMessage(cost.embeddings) });
}
