// Optimization of an agent's prompt or a skill's instructions from what its runs taught: gathers the trusted lessons
// and recent outcomes, asks the language model when one is configured (falling back to the built-in composition on
// any failure), and writes the result as a new version with source `optimization` — a `candidate` unless the caller
// asked to activate it.
import { Code, ConnectError } from "@connectrpc/connect";
import type { ChatCompleter } from "../retrieval/llm/chat-client.js";
import { notFound, quoted } from "../platform/errors.js";
import type { AgentDefinitions } from "./agent-definitions.js";
import type { Prompts } from "./prompts.js";
import type { PromptVersionRecord } from "./resource-records.js";
import type { SkillVersionRecord } from "./skill-record.js";
import type { Skills } from "./skills-store.js";
import { compose, evidenceSummary, gatherEvidence, hasEvidence, type Composition, type Evidence, type EvidenceSources } from "./optimizer-evidence.js";
import { clampTimeout, improveWithLlm, type LlmSettings, type Target } from "./optimizer-llm.js";

export interface OptimizerDeps extends EvidenceSources {
  readonly prompts: Prompts;
  readonly skills: Skills;
  readonly agents: AgentDefinitions;
  /** The configured chat model; undefined: the built-in composition only. */
  readonly llm: ChatCompleter | undefined;
  /** The server's LLM timeout, used when the request gives none. */
  readonly defaultTimeoutMs: number;
}

/** The caller's `llm_override`, validated. */
export interface LlmOverride {
  readonly model: string;
  readonly temperature: number | undefined;
  readonly maxTokens: number;
  readonly timeoutMs: number;
}

export interface Optimized<V> {
  readonly version: V;
  readonly summary: string;
  readonly confidence: number;
  readonly activated: boolean;
}

export class Optimizer {
  readonly #deps: OptimizerDeps;

  constructor(deps: OptimizerDeps) {
    this.#deps = deps;
  }

  async optimizePrompt(owner: number, projectId: string, agentId: string, override: LlmOverride, activate: boolean): Promise<Optimized<PromptVersionRecord>> {
    const { prompts } = this.#deps;
    if (!this.#deps.agents.exists(owner, projectId, agentId)) throw notFound(`agent ${quoted(agentId)} in project ${quoted(projectId)}`);
    const ref = { owner, projectId, agentId };
    const active = prompts.active(ref);
    if (active === undefined) throw failedPrecondition(`agent ${quoted(agentId)} has no active prompt to optimize`);
    const evidence = await this.#evidence(owner, new Set([agentId]));
    const result = await this.#improve({ what: "system prompt", text: active.content }, evidence, override);
    const written = await prompts.set(owner, agentId, projectId, { content: result.text, source: "optimization", activate, parentVersionId: active.versionId, optimizationSummary: result.summary });
    return { version: written.version, summary: result.summary, confidence: result.confidence, activated: activate };
  }

  async optimizeSkill(owner: number, skillId: string, projectId: string, override: LlmOverride, activate: boolean): Promise<Optimized<SkillVersionRecord>> {
    const { skill, active } = this.#deps.skills.get(owner, skillId, projectId);
    if (active === undefined) throw failedPrecondition(`skill ${quoted(skillId)} has no active version to optimize`);
    // A skill bound to an agent learns from that agent; a shared one from every agent of its project.
    const agentIds = skill.agentId !== "" ? [skill.agentId] : this.#deps.agents.idsOf(owner, skill.projectId);
    const evidence = await this.#evidence(owner, new Set(agentIds));
    const result = await this.#improve({ what: "skill instructions", text: active.instructions }, evidence, override);
    const content = { description: active.description, parametersSchema: active.parametersSchema, instructions: result.text };
    const version = await this.#deps.skills.addOptimized(owner, skillId, active.number, content, result.summary, activate);
    return { version, summary: result.summary, confidence: result.confidence, activated: activate };
  }

  async #evidence(owner: number, agentIds: ReadonlySet<string>): Promise<Evidence> {
    const evidence = await gatherEvidence(this.#deps, owner, agentIds);
    if (!hasEvidence(evidence)) throw failedPrecondition("there are no trusted lessons or outcomes of this agent to learn from");
    return evidence;
  }

  /** The model's text when it gives a usable one, else the built-in composition, saying why in the summary. */
  async #improve(target: Target, evidence: Evidence, override: LlmOverride): Promise<Composition> {
    const built = compose(target.text, evidence);
    const llm = this.#deps.llm;
    if (llm === undefined) return built;
    const settings: LlmSettings = { model: override.model, temperature: override.temperature, maxTokens: override.maxTokens, timeoutMs: clampTimeout(override.timeoutMs, this.#deps.defaultTimeoutMs) };
    const call = `language model${settings.model === "" ? "" : ` ${settings.model}`}, timeout ${settings.timeoutMs} ms`;
    const answer = await improveWithLlm(llm, target, evidence, settings);
    if (!answer.ok) return { ...built, summary: `LLM optimization failed (${call}: ${answer.reason}); fell back to the built-in composition. ${built.summary}` };
    const said = answer.summary === "" ? "" : `${answer.summary} `;
    return { text: answer.content, summary: `${said}Generated by the ${call}; ${evidenceSummary(evidence)}`, confidence: Math.round(answer.confidence * 100) / 100 };
  }
}

function failedPrecondition(message: string): ConnectError {
  return new ConnectError(message, Code.FailedPrecondition);
}
