// Projects, their agent definitions and the agents' prompt versions and heads in an export. Projects and prompt
// versions get fresh ids; every record naming a project is filed under the project's new id. An agent keeps at most
// one active prompt version: an import that would give it two is refused.
import { Code } from "@connectrpc/connect";
import type { Key } from "lmdb";
import { MAX_AGENTS_PER_PROJECT } from "../../resources/agent-definitions.js";
import {
  decodeAgentDefinition,
  decodeProject,
  decodePromptHead,
  decodePromptVersion,
  projectIdOf,
  type AgentDefinitionRecord,
  type ProjectRecord,
  type PromptHeadRecord,
  type PromptVersionRecord,
} from "../../resources/resource-records.js";
import { nextSequence, type Storage } from "../../storage/database.js";
import { prefixRange } from "../../storage/key-range.js";
import { openFields } from "../../storage/record-codec.js";
import { recordFault } from "../import-faults.js";
import { checkId } from "../record-checks.js";
import { created, keyId, ownerPage, type ImportContext, type Scanned, type TenantKind } from "../tenant-kind.js";

/** The project an imported record names under its new id; "" (an agent without a project) stays "". */
function projectOf(ctx: ImportContext, projectId: string): string {
  return projectId === "" ? "" : ctx.requireRef("project", projectId, "record.projectId");
}

export function projectKind(storage: Storage): TenantKind<ProjectRecord> {
  return {
    kind: "project",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.projects, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeProject(key, value);
        return { key: suffix, line: { id: projectIdOf(record.seq), record: { ...record } } };
      });
    },

    parse(_owner, raw) {
      const record = decodeProject(0, raw);
      checkId("name", record.name);
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      if (dbs.projectNames.get([ctx.owner, record.name]) !== undefined) {
        throw recordFault("name", `a project named ${JSON.stringify(record.name.slice(0, 64))} already exists in this memory`, Code.AlreadyExists);
      }
      const seq = nextSequence(dbs.meta, "project");
      dbs.projects.put([ctx.owner, seq], { ...record, seq });
      dbs.projectNames.put([ctx.owner, record.name], seq);
      return created(projectIdOf(seq));
    },
  };
}

export function agentDefinitionKind(storage: Storage): TenantKind<AgentDefinitionRecord> {
  return {
    kind: "agent_definition",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.agentDefinitions, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeAgentDefinition(key, value);
        return { key: suffix, line: { id: keyId([record.projectId, record.agentId]), record: { ...record } } };
      });
    },

    parse(_owner, raw) {
      const record = decodeAgentDefinition(0, raw);
      checkId("projectId", record.projectId);
      checkId("agentId", record.agentId);
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const projectId = ctx.requireRef("project", record.projectId, "record.projectId");
      const key: Key = [ctx.owner, projectId, record.agentId];
      if (dbs.agentDefinitions.get(key) !== undefined) throw recordFault("agentId", "the project already defines this agent in this memory", Code.AlreadyExists);
      if (dbs.agentDefinitions.getKeysCount(prefixRange([ctx.owner, projectId])) >= MAX_AGENTS_PER_PROJECT) {
        throw recordFault("projectId", `the project already has ${MAX_AGENTS_PER_PROJECT} agent definitions`, Code.ResourceExhausted);
      }
      dbs.agentDefinitions.put(key, { ...record, projectId });
      dbs.agentDefinitionsByAgent.put([ctx.owner, record.agentId, projectId], null);
      return created(keyId([projectId, record.agentId]));
    },
  };
}

export function promptVersionKind(storage: Storage): TenantKind<PromptVersionRecord> {
  return {
    kind: "prompt_version",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.promptVersions, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodePromptVersion(key, value);
        return { key: suffix, line: { id: record.versionId, record: { ...record } } };
      });
    },

    parse(_owner, raw) {
      const record = decodePromptVersion(0, raw);
      checkId("projectId", record.projectId, false);
      checkId("agentId", record.agentId);
      if (record.number < 1) throw recordFault("number", "must be a positive integer");
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const projectId = projectOf(ctx, record.projectId);
      const key: Key = [ctx.owner, projectId, record.agentId, record.number];
      if (dbs.promptVersions.get(key) !== undefined) throw recordFault("number", "the agent already has a prompt version of this number in this memory", Code.AlreadyExists);
      if (record.status === "active") {
        for (const { key: otherKey, value } of dbs.promptVersions.getRange({ start: [ctx.owner, projectId, record.agentId, 0], end: [ctx.owner, projectId, record.agentId, Infinity] })) {
          if (decodePromptVersion(otherKey, value).status === "active") throw recordFault("status", "the agent already has an active prompt version; an agent has at most one");
        }
      }
      const versionId = `pv_${nextSequence(dbs.meta, "prompt_version")}`;
      // A parent is an earlier version of the same agent: listed before it, else gone.
      const parentVersionId = record.parentVersionId === "" ? "" : (ctx.ref("prompt_version", record.parentVersionId) ?? "");
      dbs.promptVersions.put(key, { ...record, projectId, versionId, parentVersionId });
      return created(versionId);
    },
  };
}

interface HeadLine {
  readonly projectId: string;
  readonly agentId: string;
  readonly head: PromptHeadRecord;
}

export function promptHeadKind(storage: Storage): TenantKind<HeadLine> {
  return {
    kind: "prompt_head",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.promptHeads, owner, after, limit).map(({ suffix, key, value }) => {
        const [projectId, agentId] = suffix as [string, string];
        return { key: suffix, line: { id: keyId([projectId, agentId]), record: { projectId, agentId, ...decodePromptHead(key, value) } } };
      });
    },

    parse(_owner, raw) {
      const r = openFields("resource_prompt_heads", 0, raw);
      const head = decodePromptHead(0, raw);
      if (head.activeNumber < 0 || head.lastNumber < head.activeNumber) throw recordFault("lastNumber", "must be at least activeNumber, and activeNumber at least 0");
      const line = { projectId: r.string("projectId"), agentId: r.string("agentId"), head };
      checkId("projectId", line.projectId, false);
      checkId("agentId", line.agentId);
      return line;
    },

    write(ctx, { projectId: sourceProject, agentId, head }) {
      const { dbs } = storage;
      const projectId = projectOf(ctx, sourceProject);
      const key: Key = [ctx.owner, projectId, agentId];
      if (dbs.promptHeads.get(key) !== undefined) throw recordFault("agentId", "the agent already has a prompt in this memory", Code.AlreadyExists);
      if (head.activeNumber > 0) {
        const versionKey: Key = [ctx.owner, projectId, agentId, head.activeNumber];
        const active = dbs.promptVersions.get(versionKey);
        if (active === undefined || decodePromptVersion(versionKey, active).status !== "active") {
          throw recordFault("activeNumber", "names no active prompt version imported before it; import the lines of an export in their order");
        }
      }
      dbs.promptHeads.put(key, head);
      return created(keyId([projectId, agentId]));
    },
  };
}
