// The optimization routes of ResourcesService (prompt/optimize, skills/optimize): validate the request and its
// `llm_override`, call src/resources/optimizer.ts, shape the answer.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LlmOverride as LlmOverrideMessage, ResourcesService } from "../../../gen/engram/v2/resources_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import type { LlmOverride, Optimizer } from "../../resources/optimizer.js";
import { bounded, required } from "../memory/validate.js";
import { promptMessage } from "./resource-messages.js";
import { versionMessage } from "./skills.js";

/** Providers a caller may name: the server speaks to one OpenAI-compatible endpoint. */
const PROVIDERS = ["", "openai", "openai-compatible"] as const;

type OptimizeRoutes = Pick<ServiceImpl<typeof ResourcesService>, "optimizePrompt" | "optimizeSkill">;

export function optimizeHandlers(optimizer: Optimizer): OptimizeRoutes {
  return {
    async optimizePrompt(req, ctx) {
      const owner = callerOf(ctx).userId;
      const agentId = required("agent_id", req.agentId);
      const projectId = required("project_id", req.projectId);
      bounded("run_id", req.runId);
      const override = llmOverride(req.llmOverride);
      const result = await optimizer.optimizePrompt(owner, projectId, agentId, override, req.autoActivate);
      return { success: true, candidate: promptMessage(result.version), optimizationSummary: result.summary, confidence: result.confidence, activated: result.activated };
    },

    async optimizeSkill(req, ctx) {
      const owner = callerOf(ctx).userId;
      const skillId = required("skill_id", req.skillId);
      const projectId = bounded("project_id", req.projectId);
      const override = llmOverride(req.llmOverride);
      const result = await optimizer.optimizeSkill(owner, skillId, projectId, override, req.autoActivate);
      return { success: true, candidate: versionMessage(result.version), optimizationSummary: result.summary, confidence: result.confidence, activated: result.activated };
    },
  };
}

function llmOverride(message: LlmOverrideMessage | undefined): LlmOverride {
  if (message === undefined) return { model: "", temperature: undefined, maxTokens: 0, timeoutMs: 0 };
  const provider = bounded("llm_override.provider", message.provider).toLowerCase();
  if (!(PROVIDERS as readonly string[]).includes(provider)) throw invalidArgument("llm_override.provider", `${quoted(message.provider)} is not a configured provider; use "openai" or leave it empty`);
  const temperature = message.temperature;
  if (temperature !== undefined && (!Number.isFinite(temperature) || temperature < 0 || temperature > 2)) throw invalidArgument("llm_override.temperature", "must be between 0 and 2");
  return { model: bounded("llm_override.model", message.model), temperature, maxTokens: message.maxTokens, timeoutMs: message.timeoutMs };
}
