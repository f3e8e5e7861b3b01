// Project and agent-definition routes, adapted to src/resources/projects.ts and agent-definitions.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ResourcesService } from "../../../gen/engram/v2/resources_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import type { AgentDefinitions } from "../../resources/agent-definitions.js";
import type { Projects } from "../../resources/projects.js";
import { clampLimit, content, required } from "../memory/validate.js";
import { agentMessage, decodeBelowToken, encodeBelowToken, projectMessage } from "./resource-messages.js";

type Handlers = Pick<
  ServiceImpl<typeof ResourcesService>,
  | "createProject"
  | "listProjects"
  | "getProject"
  | "updateProject"
  | "deleteProject"
  | "createAgentDefinition"
  | "listAgentDefinitions"
  | "getAgentDefinition"
  | "updateAgentDefinition"
  | "deleteAgentDefinition"
>;

/** Free text of a resource (descriptions, roles): at most 64 KiB. */
function text(field: string, value: string): string {
  if (Buffer.byteLength(value, "utf8") > 64 * 1024) throw invalidArgument(field, "must be at most 64 KiB");
  return value;
}

export function projectHandlers(projects: Projects, agents: AgentDefinitions): Handlers {
  return {
    async createProject(req, ctx) {
      const owner = callerOf(ctx).userId;
      const view = await projects.create(owner, required("name", req.name), text("description", req.description));
      return { success: true, project: projectMessage(view) };
    },

    listProjects(req, ctx) {
      const owner = callerOf(ctx).userId;
      const page = projects.list(owner, decodeBelowToken("projects", req.pageToken), clampLimit(req.limit, 100, 500));
      return { projects: page.projects.map(projectMessage), nextPageToken: encodeBelowToken("projects", page.nextBelow) };
    },

    getProject(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const view = projects.get(owner, projectId);
      if (view === undefined) throw notFound(`project ${quoted(projectId)}`);
      return { project: projectMessage(view) };
    },

    async updateProject(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const name = req.name === undefined ? undefined : required("name", req.name);
      const description = req.description === undefined ? undefined : text("description", req.description);
      const view = await projects.update(owner, projectId, { ...(name === undefined ? {} : { name }), ...(description === undefined ? {} : { description }) });
      return { success: true, project: projectMessage(view) };
    },

    async deleteProject(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const result = await projects.delete(owner, projectId, req.force);
      return { success: true, agentDefinitionsDeleted: result.agentDefinitions, promptVersionsDeleted: result.promptVersions, skillsDeleted: result.planes["skills"] ?? 0 };
    },

    async createAgentDefinition(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const agentId = required("agent_id", req.agentId);
      const view = await agents.create(owner, projectId, agentId, {
        role: text("role", req.role),
        description: text("description", req.description),
        systemPromptContent: content("system_prompt_content", req.systemPromptContent, true),
      });
      return { success: true, agent: agentMessage(view) };
    },

    listAgentDefinitions(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const views = agents.list(owner, projectId);
      if (views === undefined) throw notFound(`project ${quoted(projectId)}`);
      return { agents: views.map(agentMessage) };
    },

    getAgentDefinition(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const agentId = required("agent_id", req.agentId);
      const view = agents.get(owner, projectId, agentId);
      if (view === undefined) throw notFound(`agent ${quoted(agentId)} in project ${quoted(projectId)}`);
      return { agent: agentMessage(view) };
    },

    async updateAgentDefinition(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = required("project_id", req.projectId);
      const agentId = required("agent_id", req.agentId);
      const view = await agents.update(owner, projectId, agentId, {
        ...(req.role === undefined ? {} : { role: text("role", req.role) }),
        ...(req.description === undefined ? {} : { description: text("description", req.description) }),
        ...(req.systemPromptContent === undefined ? {} : { systemPromptContent: content("system_prompt_content", req.systemPromptContent, true) }),
      });
      return { success: true, agent: agentMessage(view) };
    },

    async deleteAgentDefinition(req, ctx) {
      const owner = callerOf(ctx).userId;
      await agents.delete(owner, required("project_id", req.projectId), required("agent_id", req.agentId));
      return { success: true };
    },
  };
}
