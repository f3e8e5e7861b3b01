// Skills and their versions in an export. A skill gets a fresh id (its version ids follow from it) and is filed under
// its project's new id with its name index; a skill keeps at most one active version, the one it names.
import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import {
  SKILL_NAME_RECORD_VERSION,
  decodeSkill,
  decodeSkillVersion,
  skillKey,
  skillNameKey,
  skillVersionKey,
  versionIdOf,
  type SkillRecord,
  type SkillVersionRecord,
} from "../../resources/skill-record.js";
import type { Storage } from "../../storage/database.js";
import { decodeOptional } from "../../storage/record-codec.js";
import { recordFault } from "../import-faults.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { created, ownerPage, withoutOwner, type Scanned, type TenantKind } from "../tenant-kind.js";

export function skillKind(storage: Storage): TenantKind<SkillRecord> {
  return {
    kind: "skill",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.skills, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeSkill(key, value);
        return { key: suffix, line: { id: record.skillId, record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeSkill(0, { ...raw, owner });
      checkId("projectId", record.projectId);
      checkId("agentId", record.agentId, false);
      checkId("name", record.name);
      if (record.activeVersion < 0 || record.activeVersion > record.versionCount) throw recordFault("activeVersion", "must be 0 or the number of one of the skill's versions");
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const projectId = ctx.requireRef("project", record.projectId, "record.projectId");
      if (record.agentId !== "" && dbs.agentDefinitions.get([ctx.owner, projectId, record.agentId]) === undefined) {
        throw recordFault("agentId", `names agent ${JSON.stringify(record.agentId.slice(0, 64))}, which the project does not define; import the lines of an export in their order`);
      }
      const nameKey = skillNameKey(ctx.owner, projectId, record.agentId, record.name);
      if (dbs.skillNames.get(nameKey) !== undefined) throw recordFault("name", "a skill of this name already exists for this project and agent", Code.AlreadyExists);
      const skillId = `skl_${randomBytes(12).toString("hex")}`;
      dbs.skills.put(skillKey(ctx.owner, skillId), { ...record, owner: ctx.owner, skillId, projectId });
      dbs.skillNames.put(nameKey, { v: SKILL_NAME_RECORD_VERSION, skillId });
      return created(skillId);
    },
  };
}

export function skillVersionKind(storage: Storage): TenantKind<SkillVersionRecord> {
  return {
    kind: "skill_version",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.skillVersions, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeSkillVersion(key, value);
        return { key: suffix, line: { id: versionIdOf(record.skillId, record.number), record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeSkillVersion(0, { ...raw, owner });
      checkJsonObject("parametersSchema", record.parametersSchema);
      if (record.number < 1) throw recordFault("number", "must be a positive integer");
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const skillId = ctx.requireRef("skill", record.skillId, "record.skillId");
      const key = skillKey(ctx.owner, skillId);
      const skill = decodeOptional(dbs.skills.get(key), (value) => decodeSkill(key, value));
      if (skill === undefined) throw recordFault("skillId", "names a skill that is no longer stored in this memory");
      if (record.number > skill.versionCount) throw recordFault("number", `the skill has ${skill.versionCount} versions`);
      const versionKey = skillVersionKey(ctx.owner, skillId, record.number);
      if (dbs.skillVersions.get(versionKey) !== undefined) throw recordFault("number", "the skill already has a version of this number", Code.AlreadyExists);
      // The skill names its active version: only that one may be active, so a skill never has two.
      if ((record.status === "active") !== (record.number === skill.activeVersion)) {
        throw recordFault("status", `version ${record.number} cannot be ${record.status}: the skill's active version is ${skill.activeVersion}`);
      }
      dbs.skillVersions.put(versionKey, { ...record, owner: ctx.owner, skillId });
      return created(versionIdOf(skillId, record.number));
    },
  };
}
