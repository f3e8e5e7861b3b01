// ResourcesService: projects and agent definitions, versioned prompts, and (from their own module) versioned skills,
// each route family adapting requests to src/resources. Routes not built yet answer UNIMPLEMENTED.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ResourcesService } from "../../../gen/engram/v2/resources_service_pb.js";
import type { AgentDefinitions } from "../../resources/agent-definitions.js";
import type { Projects } from "../../resources/projects.js";
import type { Prompts } from "../../resources/prompts.js";
import type { Skills } from "../../resources/skills-store.js";
import { projectHandlers } from "./projects.js";
import { promptHandlers } from "./prompts.js";
import { skillHandlers } from "./skills.js";
import { optimizeHandlers } from "./optimize.js";
import type { Optimizer } from "../../resources/optimizer.js";
import type { RunHistory } from "../../resources/run-history.js";
import { runHistoryHandlers } from "./run-history.js";

export interface ResourcesDeps {
  readonly projects: Projects;
  readonly agents: AgentDefinitions;
  readonly prompts: Prompts;
  readonly skills: Skills;
  readonly optimizer?: Optimizer;
  readonly runHistory?: RunHistory;
}

export function resourcesService(deps: ResourcesDeps): Partial<ServiceImpl<typeof ResourcesService>> {
  return {
    ...projectHandlers(deps.projects, deps.agents),
    ...promptHandlers(deps.prompts),
    ...skillHandlers({ skills: deps.skills }),
    ...(deps.optimizer === undefined ? {} : optimizeHandlers(deps.optimizer)),
    ...(deps.runHistory === undefined ? {} : runHistoryHandlers({ history: deps.runHistory, projectExists: (owner, projectId) => deps.projects.exists(owner, projectId) })),
  };
}
