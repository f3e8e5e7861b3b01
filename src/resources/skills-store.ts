// Versioned skills of an owner's projects: create, read, update (a new active version), delete, list versions,
// activate (with rollback copies) and diff. Every change is one LMDB transaction that checks and swaps the active
// version inside it, so a skill has at most one active version at any moment, also under concurrent activations;
// events are announced after the commit.
import { randomBytes } from "node:crypto";
import type { Key } from "lmdb";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import { notFound, quoted } from "../platform/errors.js";
import type { Storage } from "../storage/database.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import type { ProjectPlane } from "./projects.js";
import { diffSkillVersions } from "./skill-diff.js";
import {
  SKILL_NAME_RECORD_VERSION,
  SKILL_RECORD_VERSION,
  SKILL_VERSION_RECORD_VERSION,
  decodeSkill,
  decodeSkillName,
  decodeSkillVersion,
  parseVersionId,
  skillKey,
  skillNameKey,
  skillVersionKey,
  versionIdOf,
  type SkillRecord,
  type SkillType,
  type SkillVersionRecord,
  type VersionStatus,
} from "./skill-record.js";
import { prefixRange } from "../storage/key-range.js";

/** The project plane, as skills see it: whether a project, and an agent in it, exist (read inside transactions). */
export interface SkillProjects {
  projectExists(owner: number, projectId: string): boolean;
  agentExists(owner: number, projectId: string, agentId: string): boolean;
}

/** Until a project plane is wired, any project id is accepted. */
const ANY_PROJECT: SkillProjects = { projectExists: () => true, agentExists: () => true };

/** A skill with its active version (undefined only if none is active). */
export interface SkillView {
  readonly skill: SkillRecord;
  readonly active: SkillVersionRecord | undefined;
}

/** The versioned content of a skill. */
export interface SkillContent {
  readonly description: string;
  readonly parametersSchema: string;
  readonly instructions: string;
}

export interface NewSkill extends SkillContent {
  readonly owner: number;
  readonly projectId: string;
  readonly agentId: string;
  readonly name: string;
  readonly skillType: SkillType;
}

export interface SkillChange {
  readonly name?: string;
  readonly description?: string;
  readonly parametersSchema?: string;
  readonly instructions?: string;
  /** False: a content change becomes a `candidate` version instead of the active one. */
  readonly activate: boolean;
}

export interface Activation {
  readonly version: SkillVersionRecord;
  /** Number of the version that was retired; 0 when none was. */
  readonly retired: number;
}

export class Skills {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #projects: SkillProjects;
  readonly #now: () => number;

  constructor(storage: Storage, events: EventBus, projects: SkillProjects = ANY_PROJECT, now: () => number = Date.now) {
    this.#storage = storage;
    this.#events = events;
    this.#projects = projects;
    this.#now = now;
    checkVersions("resource_skills", storage.dbs.skills, SKILL_RECORD_VERSION);
    checkVersions("resource_skill_versions", storage.dbs.skillVersions, SKILL_VERSION_RECORD_VERSION);
    checkVersions("resource_skill_names", storage.dbs.skillNames, SKILL_NAME_RECORD_VERSION);
  }

  /** Creates a skill whose first version is `active`, source `manual`. */
  async create(input: NewSkill): Promise<SkillView> {
    const { owner, projectId, agentId, name } = input;
    const view = await this.#storage.transaction(() => {
      this.#checkOwnerOf(owner, projectId, agentId);
      const nameKey = skillNameKey(owner, projectId, agentId, name);
      if (this.#storage.dbs.skillNames.get(nameKey) !== undefined) throw nameTaken(name);
      const now = this.#now();
      const skillId = `skl_${randomBytes(12).toString("hex")}`;
      const skill: SkillRecord = { v: SKILL_RECORD_VERSION, owner, skillId, projectId, agentId, name, skillType: input.skillType, createdAt: now, updatedAt: now, versionCount: 1, activeVersion: 1 };
      const first = newVersion(skill, 1, input, "active", "manual", 0, now);
      this.#storage.dbs.skills.put(skillKey(owner, skillId), skill);
      this.#storage.dbs.skillVersions.put(skillVersionKey(owner, skillId, 1), first);
      this.#storage.dbs.skillNames.put(nameKey, { v: SKILL_NAME_RECORD_VERSION, skillId });
      return { skill, active: first };
    });
    this.#announce("skill.created", view.skill, { name, skill_type: view.skill.skillType, version_id: versionIdOf(view.skill.skillId, 1) });
    return view;
  }

  /** A project's skills sorted by name; with `agentId`, the shared ones and those bound to that agent. */
  list(owner: number, projectId: string, agentId: string, limit: number): SkillView[] {
    if (!this.#projects.projectExists(owner, projectId)) throw notFound(`project ${projectId}`);
    const found: SkillRecord[] = [];
    for (const { key, value } of this.#storage.dbs.skillNames.getRange(prefixRange([owner, projectId]))) {
      const skill = this.#skill(owner, decodeSkillName(key, value).skillId);
      if (skill !== undefined && (agentId === "" || skill.agentId === "" || skill.agentId === agentId)) found.push(skill);
    }
    found.sort((a, b) => compare(a.name, b.name) || compare(a.agentId, b.agentId));
    return found.slice(0, limit).map((skill) => ({ skill, active: this.#version(skill, skill.activeVersion) }));
  }

  /** One skill; NOT_FOUND when the caller has none of this id, or it is not in `projectId` (when given). */
  get(owner: number, skillId: string, projectId = ""): SkillView {
    const skill = this.#found(owner, skillId, projectId);
    return { skill, active: this.#version(skill, skill.activeVersion) };
  }

  /**
   * Renames the skill (not versioned) and/or writes changed content as a new `active` version (source `manual`), the
   * previous active one becoming `retired` — or, with `activate` false, as a new `candidate`. Fields left undefined,
   * or equal to the active version's, change nothing. Answers the skill with its active version.
   */
  async update(owner: number, skillId: string, projectId: string, change: SkillChange): Promise<SkillView> {
    const result = await this.#storage.transaction(() => {
      let skill = this.#found(owner, skillId, projectId);
      const active = this.#version(skill, skill.activeVersion);
      const now = this.#now();
      let changed = false;
      if (change.name !== undefined && change.name !== skill.name) {
        const nameKey = skillNameKey(owner, skill.projectId, skill.agentId, change.name);
        if (this.#storage.dbs.skillNames.get(nameKey) !== undefined) throw nameTaken(change.name);
        this.#storage.dbs.skillNames.remove(skillNameKey(owner, skill.projectId, skill.agentId, skill.name));
        this.#storage.dbs.skillNames.put(nameKey, { v: SKILL_NAME_RECORD_VERSION, skillId });
        skill = { ...skill, name: change.name, updatedAt: now };
        changed = true;
      }
      const content: SkillContent = {
        description: change.description ?? active?.description ?? "",
        parametersSchema: change.parametersSchema ?? active?.parametersSchema ?? "{}",
        instructions: change.instructions ?? active?.instructions ?? "",
      };
      let version = active;
      let retired = 0;
      if (!change.activate && (active === undefined || !sameContent(active, content))) {
        const number = skill.versionCount + 1;
        this.#putVersion(newVersion(skill, number, content, "candidate", "manual", skill.activeVersion, now));
        skill = { ...skill, versionCount: number, updatedAt: now };
        changed = true;
      } else if (active === undefined || !sameContent(active, content)) {
        const number = skill.versionCount + 1;
        version = newVersion(skill, number, content, "active", "manual", skill.activeVersion, now);
        if (active !== undefined) {
          this.#putVersion({ ...active, status: "retired" });
          retired = active.number;
        }
        this.#putVersion(version);
        skill = { ...skill, versionCount: number, activeVersion: number, updatedAt: now };
        changed = true;
      }
      if (changed) this.#storage.dbs.skills.put(skillKey(owner, skillId), skill);
      return { view: { skill, active: version }, changed, retired };
    });
    if (result.changed) {
      const { skill } = result.view;
      this.#announce("skill.updated", skill, { name: skill.name, active_version_id: versionIdOf(skillId, skill.activeVersion), latest_version_id: versionIdOf(skillId, skill.versionCount), retired_version_id: result.retired === 0 ? "" : versionIdOf(skillId, result.retired) });
    }
    return result.view;
  }

  /** Deletes the skill with all its versions. */
  async delete(owner: number, skillId: string, projectId: string): Promise<void> {
    const skill = await this.#storage.transaction(() => {
      const found = this.#found(owner, skillId, projectId);
      removeSkill(this.#storage, found);
      return found;
    });
    this.#announce("skill.deleted", skill, { name: skill.name });
  }

  /** The skill's versions, newest first, optionally only those of one status. */
  versions(owner: number, skillId: string, status: VersionStatus | undefined, limit: number): SkillVersionRecord[] {
    const skill = this.#found(owner, skillId, "");
    const out: SkillVersionRecord[] = [];
    const range = { start: [owner, skillId, skill.versionCount], end: [owner, skillId, 0], reverse: true };
    for (const { key, value } of this.#storage.dbs.skillVersions.getRange(range)) {
      const version = decodeSkillVersion(key, value);
      if (status !== undefined && version.status !== status) continue;
      out.push(version);
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * Makes a version `active`: a `candidate` in place, a `retired` or `archived` one as a new version copied from it
   * (source `rollback`); the active one stays as it is. The previous active version becomes `retired` and the
   * candidates older than the requested version become `archived` (passed over). Checked and swapped in one
   * transaction.
   */
  async activate(owner: number, skillId: string, versionId: string): Promise<Activation> {
    const result = await this.#storage.transaction(() => {
      const skill = this.#found(owner, skillId, "");
      const target = this.#namedVersion(skill, versionId);
      if (target.status === "active") return { skill, activation: { version: target, retired: 0 }, changed: false };
      const now = this.#now();
      const rollback = target.status !== "candidate";
      const number = rollback ? skill.versionCount + 1 : target.number;
      const version: SkillVersionRecord = rollback
        ? newVersion(skill, number, target, "active", "rollback", target.number, now)
        : { ...target, status: "active", activatedAt: now };
      let retired = 0;
      for (const { key, value } of this.#storage.dbs.skillVersions.getRange({ start: [owner, skillId, 1], end: [owner, skillId, skill.versionCount + 1] })) {
        const other = decodeSkillVersion(key, value);
        if (other.status === "active") {
          this.#putVersion({ ...other, status: "retired" });
          retired = other.number;
        } else if (other.status === "candidate" && other.number < target.number) {
          this.#putVersion({ ...other, status: "archived" });
        }
      }
      this.#putVersion(version);
      const updated: SkillRecord = { ...skill, versionCount: Math.max(skill.versionCount, number), activeVersion: number, updatedAt: now };
      this.#storage.dbs.skills.put(skillKey(owner, skillId), updated);
      return { skill: updated, activation: { version, retired }, changed: true };
    });
    if (result.changed) {
      const { version, retired } = result.activation;
      this.#announce("skill.version.activated", result.skill, {
        version_id: versionIdOf(skillId, version.number),
        source: version.source,
        retired_version_id: retired === 0 ? "" : versionIdOf(skillId, retired),
      });
    }
    return result.activation;
  }

  /**
   * Writes an optimization's version (source `optimization`, derived from the active one) in one transaction: a
   * `candidate`, or with `activate` the new `active` version (the previous one `retired`, older candidates `archived`).
   * `expectedActive` is the version number the optimization read: if another write moved it since, ABORTED.
   */
  async addOptimized(owner: number, skillId: string, expectedActive: number, content: SkillContent, summary: string, activate: boolean): Promise<SkillVersionRecord> {
    const result = await this.#storage.transaction(() => {
      const skill = this.#found(owner, skillId, "");
      if (skill.activeVersion !== expectedActive) throw new ConnectError(`skill ${skillId} changed during the optimization; retry`, Code.Aborted);
      const now = this.#now();
      const number = skill.versionCount + 1;
      const version = { ...newVersion(skill, number, content, activate ? "active" : "candidate", "optimization", skill.activeVersion, now), optimizationSummary: summary };
      let retired = 0;
      if (activate) {
        for (const { key, value } of this.#storage.dbs.skillVersions.getRange({ start: [owner, skillId, 1], end: [owner, skillId, number] })) {
          const other = decodeSkillVersion(key, value);
          if (other.status === "active") retired = other.number;
          if (other.status === "active" || other.status === "candidate") this.#putVersion({ ...other, status: other.status === "active" ? "retired" : "archived" });
        }
      }
      this.#putVersion(version);
      const updated: SkillRecord = { ...skill, versionCount: number, activeVersion: activate ? number : skill.activeVersion, updatedAt: now };
      this.#storage.dbs.skills.put(skillKey(owner, skillId), updated);
      return { skill: updated, version, retired };
    });
    const { skill, version, retired } = result;
    this.#announce("skill.updated", skill, { name: skill.name, active_version_id: versionIdOf(skillId, skill.activeVersion), latest_version_id: versionIdOf(skillId, version.number), retired_version_id: retired === 0 ? "" : versionIdOf(skillId, retired) });
    return version;
  }

  /** Unified diff from version A to version B (the active one when `versionBId` is empty). */
  diff(owner: number, skillId: string, versionAId: string, versionBId: string): { text: string; a: SkillVersionRecord; b: SkillVersionRecord } {
    const skill = this.#found(owner, skillId, "");
    const a = this.#namedVersion(skill, versionAId);
    const b = versionBId === "" ? this.#version(skill, skill.activeVersion) : this.#namedVersion(skill, versionBId);
    if (b === undefined) throw notFound(`active version of skill ${skillId}`);
    return { text: diffSkillVersions(a, b), a, b };
  }

  #checkOwnerOf(owner: number, projectId: string, agentId: string): void {
    if (!this.#projects.projectExists(owner, projectId)) throw notFound(`project ${projectId}`);
    if (agentId !== "" && !this.#projects.agentExists(owner, projectId, agentId)) throw notFound(`agent ${agentId} in project ${projectId}`);
  }

  #skill(owner: number, skillId: string): SkillRecord | undefined {
    const key = skillKey(owner, skillId);
    return decodeOptional(this.#storage.dbs.skills.get(key), (value) => decodeSkill(key, value));
  }

  #found(owner: number, skillId: string, projectId: string): SkillRecord {
    const skill = this.#skill(owner, skillId);
    if (skill === undefined || (projectId !== "" && skill.projectId !== projectId)) throw notFound(`skill ${skillId}`);
    return skill;
  }

  #version(skill: SkillRecord, number: number): SkillVersionRecord | undefined {
    if (number === 0) return undefined;
    const key = skillVersionKey(skill.owner, skill.skillId, number);
    return decodeOptional(this.#storage.dbs.skillVersions.get(key), (value) => decodeSkillVersion(key, value));
  }

  #namedVersion(skill: SkillRecord, versionId: string): SkillVersionRecord {
    const parsed = parseVersionId(versionId);
    const version = parsed === undefined || parsed.skillId !== skill.skillId ? undefined : this.#version(skill, parsed.number);
    if (version === undefined) throw notFound(`version ${versionId} of skill ${skill.skillId}`);
    return version;
  }

  #putVersion(version: SkillVersionRecord): void {
    this.#storage.dbs.skillVersions.put(skillVersionKey(version.owner, version.skillId, version.number), version);
  }

  #announce(type: string, skill: SkillRecord, payload: Record<string, string>): void {
    this.#events.publish({
      type,
      owner: skill.owner,
      runId: "",
      agentId: skill.agentId,
      payload: JSON.stringify({ skill_id: skill.skillId, project_id: skill.projectId, agent_id: skill.agentId, ...payload }),
    });
  }
}

/** The skills as a plane of the project store: counted before a project is deleted, deleted with it or its agent. */
export function skillsProjectPlane(storage: Storage): ProjectPlane {
  return {
    name: "skills",
    countOfProject: (owner, projectId) => storage.dbs.skillNames.getKeysCount(prefixRange([owner, projectId])),
    deleteOfProjectInTransaction: (owner, projectId) => deleteSkillsOfProjectInTransaction(storage, owner, projectId),
    deleteOfAgentInTransaction: (owner, projectId, agentId) => deleteSkillsOfAgentInTransaction(storage, owner, projectId, agentId),
  };
}

/**
 * Deletes every skill of the owner's project with its versions; call inside the write transaction that deletes the
 * project. Returns how many skills were deleted.
 */
export function deleteSkillsOfProjectInTransaction(storage: Storage, owner: number, projectId: string): number {
  return deleteSkillsUnder(storage, prefixRange([owner, projectId]));
}

/** Deletes the skills bound to one agent of a project (not the shared ones); inside the agent's deleting transaction. */
export function deleteSkillsOfAgentInTransaction(storage: Storage, owner: number, projectId: string, agentId: string): number {
  if (agentId === "") return 0;
  return deleteSkillsUnder(storage, prefixRange([owner, projectId, agentId]));
}

function deleteSkillsUnder(storage: Storage, range: { start: Key; end: Key }): number {
  const skills: SkillRecord[] = [];
  // Collected first: the range is not walked while it is being removed from.
  for (const { key, value } of storage.dbs.skillNames.getRange(range)) {
    const owner = Array.isArray(key) ? (key as unknown[])[0] : undefined;
    if (typeof owner !== "number") continue;
    const id = decodeSkillName(key, value).skillId;
    const sKey = skillKey(owner, id);
    const skill = decodeOptional(storage.dbs.skills.get(sKey), (v) => decodeSkill(sKey, v));
    if (skill !== undefined) skills.push(skill);
    else storage.dbs.skillNames.remove(key);
  }
  for (const skill of skills) removeSkill(storage, skill);
  return skills.length;
}

function removeSkill(storage: Storage, skill: SkillRecord): void {
  const { owner, skillId } = skill;
  for (let n = 1; n <= skill.versionCount; n++) storage.dbs.skillVersions.remove(skillVersionKey(owner, skillId, n));
  storage.dbs.skillNames.remove(skillNameKey(owner, skill.projectId, skill.agentId, skill.name));
  storage.dbs.skills.remove(skillKey(owner, skillId));
}

function newVersion(
  skill: SkillRecord,
  number: number,
  content: SkillContent,
  status: VersionStatus,
  source: SkillVersionRecord["source"],
  parentNumber: number,
  now: number,
): SkillVersionRecord {
  return {
    v: SKILL_VERSION_RECORD_VERSION,
    owner: skill.owner,
    skillId: skill.skillId,
    number,
    description: content.description,
    parametersSchema: content.parametersSchema,
    instructions: content.instructions,
    status,
    source,
    parentNumber,
    createdAt: now,
    activatedAt: status === "active" ? now : 0,
    optimizationSummary: "",
  };
}

function sameContent(a: SkillContent, b: SkillContent): boolean {
  return a.description === b.description && a.parametersSchema === b.parametersSchema && a.instructions === b.instructions;
}

function nameTaken(name: string): ConnectError {
  return new ConnectError(`name: a skill named ${quoted(name)} already exists for this project and agent`, Code.AlreadyExists);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
