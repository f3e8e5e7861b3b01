// Skills as stored: the skill, its versions and its name index, each decoded with its schema version on every read.
import type { Key } from "lmdb";
import { openRecord } from "../storage/record-codec.js";
import { VERSION_SOURCES, VERSION_STATUSES, type VersionSource, type VersionStatus } from "./resource-records.js";

// Version states and sources are shared with prompt versions and defined once, in resource-records.ts.
export { VERSION_SOURCES, VERSION_STATUSES, type VersionSource, type VersionStatus };
/** Kinds of skill; `tool` is the default. */
export const SKILL_TYPES = ["tool", "playbook"] as const;
export type SkillType = (typeof SKILL_TYPES)[number];

export const SKILL_RECORD_VERSION = 1;
export const SKILL_VERSION_RECORD_VERSION = 1;
export const SKILL_NAME_RECORD_VERSION = 1;

/** A skill: what does not change between versions, and which version is active. */
export interface SkillRecord {
  readonly v: typeof SKILL_RECORD_VERSION;
  readonly owner: number;
  readonly skillId: string;
  readonly projectId: string;
  /** "" when shared by the whole project. */
  readonly agentId: string;
  readonly name: string;
  readonly skillType: SkillType;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Number of the newest version (versions are numbered 1, 2, …). */
  readonly versionCount: number;
  /** Number of the active version; 0 when none is. */
  readonly activeVersion: number;
}

/** The versioned content of a skill. */
export interface SkillVersionRecord {
  readonly v: typeof SKILL_VERSION_RECORD_VERSION;
  readonly owner: number;
  readonly skillId: string;
  readonly number: number;
  readonly description: string;
  /** JSON Schema as JSON object text. */
  readonly parametersSchema: string;
  readonly instructions: string;
  readonly status: VersionStatus;
  readonly source: VersionSource;
  /** Number of the version it was derived from; 0 for none. */
  readonly parentNumber: number;
  readonly createdAt: number;
  /** Last time it became active; 0 if never. */
  readonly activatedAt: number;
  readonly optimizationSummary: string;
}

/** The name index: one skill per project, agent ("" = shared) and name; also lists a project's skills. */
export interface SkillNameRecord {
  readonly v: typeof SKILL_NAME_RECORD_VERSION;
  readonly skillId: string;
}

export function skillKey(owner: number, skillId: string): Key {
  return [owner, skillId];
}

export function skillVersionKey(owner: number, skillId: string, number: number): Key {
  return [owner, skillId, number];
}

export function skillNameKey(owner: number, projectId: string, agentId: string, name: string): Key {
  return [owner, projectId, agentId, name];
}

export function decodeSkill(key: Key, value: unknown): SkillRecord {
  const r = openRecord("resource_skills", key, value, SKILL_RECORD_VERSION);
  return {
    v: SKILL_RECORD_VERSION,
    owner: r.integer("owner"),
    skillId: r.string("skillId"),
    projectId: r.string("projectId"),
    agentId: r.string("agentId"),
    name: r.string("name"),
    skillType: r.oneOf("skillType", SKILL_TYPES),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
    versionCount: r.integer("versionCount"),
    activeVersion: r.integer("activeVersion"),
  };
}

export function decodeSkillVersion(key: Key, value: unknown): SkillVersionRecord {
  const r = openRecord("resource_skill_versions", key, value, SKILL_VERSION_RECORD_VERSION);
  return {
    v: SKILL_VERSION_RECORD_VERSION,
    owner: r.integer("owner"),
    skillId: r.string("skillId"),
    number: r.integer("number"),
    description: r.string("description"),
    parametersSchema: r.string("parametersSchema"),
    instructions: r.string("instructions"),
    status: r.oneOf("status", VERSION_STATUSES),
    source: r.oneOf("source", VERSION_SOURCES),
    parentNumber: r.integer("parentNumber"),
    createdAt: r.number("createdAt"),
    activatedAt: r.number("activatedAt"),
    optimizationSummary: r.string("optimizationSummary"),
  };
}

export function decodeSkillName(key: Key, value: unknown): SkillNameRecord {
  const r = openRecord("resource_skill_names", key, value, SKILL_NAME_RECORD_VERSION);
  return { v: SKILL_NAME_RECORD_VERSION, skillId: r.string("skillId") };
}

/** Skill ids are `skl_<24 hex>`; a version id is `skv_<the same hex>_<number>`, so it names its skill and key. */
export function versionIdOf(skillId: string, number: number): string {
  return `skv_${skillId.slice("skl_".length)}_${number}`;
}

/** The skill id and number a version id names; undefined when it is not a version id. */
export function parseVersionId(versionId: string): { skillId: string; number: number } | undefined {
  const match = /^skv_([0-9a-f]{24})_([1-9][0-9]{0,8})$/.exec(versionId);
  if (match === null) return undefined;
  return { skillId: `skl_${match[1] ?? ""}`, number: Number(match[2]) };
}
