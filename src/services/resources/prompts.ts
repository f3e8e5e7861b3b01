// Prompt routes: set, get, versions, activate and diff, adapted to src/resources/prompts.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ResourcesService } from "../../../gen/engram/v2/resources_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { notFound, quoted } from "../../platform/errors.js";
import type { AgentRef, Prompts } from "../../resources/prompts.js";
import { VERSION_STATUSES, type PromptVersionRecord } from "../../resources/resource-records.js";
import { bounded, clampLimit, content, oneOf, required } from "../memory/validate.js";
import { decodeBelowToken, encodeBelowToken, promptMessage } from "./resource-messages.js";

type Handlers = Pick<ServiceImpl<typeof ResourcesService>, "setPrompt" | "getPrompt" | "listPromptVersions" | "activatePromptVersion" | "getPromptDiff">;

export function promptHandlers(prompts: Prompts): Handlers {
  /** The agent a read names; NOT_FOUND when it has no prompt at all. */
  const readRef = (owner: number, agentId: string, projectId: string): AgentRef => {
    const ref = { owner, agentId, projectId: prompts.resolveProject(owner, agentId, projectId) };
    if (!prompts.hasPrompt(ref)) throw notFound(`prompt of agent ${quoted(agentId)}`);
    return ref;
  };
  const versionOf = (ref: AgentRef, versionId: string): PromptVersionRecord => {
    const version = prompts.findVersion(ref, versionId);
    if (version === undefined) throw notFound(`prompt version ${quoted(versionId)} of agent ${quoted(ref.agentId)}`);
    return version;
  };
  const activeOf = (ref: AgentRef): PromptVersionRecord => {
    const version = prompts.active(ref);
    if (version === undefined) throw notFound(`active prompt of agent ${quoted(ref.agentId)}`);
    return version;
  };

  return {
    async setPrompt(req, ctx) {
      const owner = callerOf(ctx).userId;
      const agentId = required("agent_id", req.agentId);
      const text = content("content", req.content);
      bounded("run_id", req.runId);
      const result = await prompts.set(owner, agentId, bounded("project_id", req.projectId), { content: text, source: "manual", activate: req.activate });
      return { success: true, version: promptMessage(result.version) };
    },

    getPrompt(req, ctx) {
      const owner = callerOf(ctx).userId;
      const ref = readRef(owner, required("agent_id", req.agentId), bounded("project_id", req.projectId));
      const version = req.versionId === "" ? activeOf(ref) : versionOf(ref, bounded("version_id", req.versionId));
      return { version: promptMessage(version) };
    },

    listPromptVersions(req, ctx) {
      const owner = callerOf(ctx).userId;
      const agentId = required("agent_id", req.agentId);
      const status = req.statusFilter === "" ? undefined : oneOf("status_filter", req.statusFilter, VERSION_STATUSES, "active");
      const ref = readRef(owner, agentId, bounded("project_id", req.projectId));
      const listing = JSON.stringify(["prompt-versions", ref.projectId, agentId, status ?? ""]);
      const page = prompts.list(ref, status, decodeBelowToken(listing, req.pageToken), clampLimit(req.limit, 20, 100));
      return { versions: page.versions.map(promptMessage), nextPageToken: encodeBelowToken(listing, page.nextBelow) };
    },

    async activatePromptVersion(req, ctx) {
      const owner = callerOf(ctx).userId;
      const agentId = required("agent_id", req.agentId);
      const versionId = required("version_id", req.versionId);
      const result = await prompts.activate(owner, agentId, bounded("project_id", req.projectId), versionId);
      return { success: true, version: promptMessage(result.version), retiredVersionId: result.retiredVersionId };
    },

    getPromptDiff(req, ctx) {
      const owner = callerOf(ctx).userId;
      const agentId = required("agent_id", req.agentId);
      const versionAId = required("version_a_id", req.versionAId);
      const ref = readRef(owner, agentId, bounded("project_id", req.projectId));
      const a = versionOf(ref, versionAId);
      const b = req.versionBId === "" ? activeOf(ref) : versionOf(ref, bounded("version_b_id", req.versionBId));
      return { diffText: prompts.diff(a, b), versionA: promptMessage(a), versionB: promptMessage(b) };
    },
  };
}
