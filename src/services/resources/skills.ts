// The skill routes of ResourcesService: validate each request, call src/resources/skills-store.ts, shape the answer.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ResourcesService, SkillDefinitionSchema, SkillVersionSchema } from "../../../gen/engram/v2/resources_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import { SKILL_TYPES, VERSION_STATUSES, versionIdOf, type SkillVersionRecord, type VersionStatus } from "../../resources/skill-record.js";
import { checkParametersSchema } from "../../resources/skill-schema.js";
import type { Skills, SkillView } from "../../resources/skills-store.js";
import { bounded, clampLimit, content, oneOf, required } from "../memory/validate.js";
import { iso } from "../iso-time.js";

export interface SkillHandlerDeps {
  readonly skills: Skills;
}

type SkillRoutes = Pick<
  ServiceImpl<typeof ResourcesService>,
  "createSkill" | "listSkills" | "getSkill" | "updateSkill" | "deleteSkill" | "listSkillVersions" | "activateSkillVersion" | "getSkillDiff"
>;

export function skillHandlers(deps: SkillHandlerDeps): SkillRoutes {
  const { skills } = deps;
  return {
    async createSkill(req, ctx) {
      const owner = callerOf(ctx).userId;
      const view = await skills.create({
        owner,
        projectId: required("project_id", req.projectId),
        agentId: bounded("agent_id", req.agentId),
        name: required("name", req.name),
        skillType: oneOf("skill_type", req.skillType, SKILL_TYPES, "tool"),
        description: content("description", req.description, true),
        parametersSchema: checkParametersSchema("parameters_schema", content("parameters_schema", req.parametersSchema, true)),
        instructions: content("instructions", req.instructions, true),
      });
      return { success: true, skill: skillMessage(view) };
    },

    listSkills(req, ctx) {
      const owner = callerOf(ctx).userId;
      const views = skills.list(owner, required("project_id", req.projectId), bounded("agent_id", req.agentId), clampLimit(req.limit, 100, 500));
      return { skills: views.map(skillMessage) };
    },

    getSkill(req, ctx) {
      const owner = callerOf(ctx).userId;
      return { skill: skillMessage(skills.get(owner, required("skill_id", req.skillId), bounded("project_id", req.projectId))) };
    },

    async updateSkill(req, ctx) {
      const owner = callerOf(ctx).userId;
      const skillId = required("skill_id", req.skillId);
      const projectId = bounded("project_id", req.projectId);
      const view = await skills.update(owner, skillId, projectId, {
        name: req.name === undefined ? undefined : required("name", req.name),
        description: req.description === undefined ? undefined : content("description", req.description, true),
        parametersSchema: req.parametersSchema === undefined ? undefined : checkParametersSchema("parameters_schema", content("parameters_schema", req.parametersSchema, true)),
        instructions: req.instructions === undefined ? undefined : content("instructions", req.instructions, true),
        activate: req.activate ?? true,
      });
      return { success: true, skill: skillMessage(view) };
    },

    async deleteSkill(req, ctx) {
      const owner = callerOf(ctx).userId;
      await skills.delete(owner, required("skill_id", req.skillId), bounded("project_id", req.projectId));
      return { success: true };
    },

    listSkillVersions(req, ctx) {
      const owner = callerOf(ctx).userId;
      const versions = skills.versions(owner, required("skill_id", req.skillId), statusFilter(req.statusFilter), clampLimit(req.limit, 20, 100));
      return { versions: versions.map(versionMessage) };
    },

    async activateSkillVersion(req, ctx) {
      const owner = callerOf(ctx).userId;
      const skillId = required("skill_id", req.skillId);
      const activation = await skills.activate(owner, skillId, required("version_id", req.versionId));
      return {
        success: true,
        version: versionMessage(activation.version),
        retiredVersionId: activation.retired === 0 ? "" : versionIdOf(skillId, activation.retired),
      };
    },

    getSkillDiff(req, ctx) {
      const owner = callerOf(ctx).userId;
      const diff = skills.diff(owner, required("skill_id", req.skillId), required("version_a_id", req.versionAId), bounded("version_b_id", req.versionBId));
      return { diffText: diff.text, versionA: versionMessage(diff.a), versionB: versionMessage(diff.b) };
    },
  };
}

function statusFilter(value: string): VersionStatus | undefined {
  if (value === "") return undefined;
  const match = VERSION_STATUSES.find((s) => s === value.toLowerCase());
  if (match === undefined) throw invalidArgument("status_filter", `must be one of ${VERSION_STATUSES.join(", ")}`);
  return match;
}

function skillMessage(view: SkillView): MessageInitShape<typeof SkillDefinitionSchema> {
  const { skill, active } = view;
  return {
    skillId: skill.skillId,
    projectId: skill.projectId,
    agentId: skill.agentId,
    name: skill.name,
    description: active?.description ?? "",
    parametersSchema: active?.parametersSchema ?? "{}",
    instructions: active?.instructions ?? "",
    skillType: skill.skillType,
    createdAt: iso(skill.createdAt),
    updatedAt: iso(skill.updatedAt),
    activeVersionId: skill.activeVersion === 0 ? "" : versionIdOf(skill.skillId, skill.activeVersion),
  };
}

export function versionMessage(version: SkillVersionRecord): MessageInitShape<typeof SkillVersionSchema> {
  return {
    versionId: versionIdOf(version.skillId, version.number),
    skillId: version.skillId,
    description: version.description,
    parametersSchema: version.parametersSchema,
    instructions: version.instructions,
    status: version.status,
    versionNumber: version.number,
    source: version.source,
    parentVersionId: version.parentNumber === 0 ? "" : versionIdOf(version.skillId, version.parentNumber),
    createdAt: iso(version.createdAt),
    activatedAt: iso(version.activatedAt),
    optimizationSummary: version.optimizationSummary,
    avgOutcomeScore: 0,
    outcomeCount: 0,
  };
}
