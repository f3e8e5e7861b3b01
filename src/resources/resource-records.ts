// The managed-resource records kept in LMDB — projects, agent definitions, prompt heads and prompt versions — with
// one decoder per kind, and the enumerations of version statuses and sources.
import type { Key } from "lmdb";
import { openRecord } from "../storage/record-codec.js";

export const VERSION_STATUSES = ["active", "candidate", "retired", "archived"] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];
export const VERSION_SOURCES = ["manual", "optimization", "rollback"] as const;
export type VersionSource = (typeof VERSION_SOURCES)[number];

export const RESOURCE_RECORD_VERSION = 1;

/** [owner, seq] → a project; its id is `prj_<seq>`. */
export interface ProjectRecord {
  readonly v: typeof RESOURCE_RECORD_VERSION;
  readonly seq: number;
  readonly name: string;
  readonly description: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** [owner, project_id, agent_id] → an agent definition (its prompt lives in the prompt records). */
export interface AgentDefinitionRecord {
  readonly v: typeof RESOURCE_RECORD_VERSION;
  readonly projectId: string;
  readonly agentId: string;
  readonly role: string;
  readonly description: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** [owner, project_id, agent_id] → the agent's active version number (0: none) and its last version number. */
export interface PromptHeadRecord {
  readonly v: typeof RESOURCE_RECORD_VERSION;
  readonly activeNumber: number;
  readonly lastNumber: number;
}

/** [owner, project_id, agent_id, version_number] → one prompt version. */
export interface PromptVersionRecord {
  readonly v: typeof RESOURCE_RECORD_VERSION;
  readonly versionId: string;
  readonly projectId: string;
  readonly agentId: string;
  readonly number: number;
  readonly content: string;
  readonly status: VersionStatus;
  readonly source: VersionSource;
  readonly parentVersionId: string;
  readonly optimizationSummary: string;
  readonly createdAt: number;
  /** Last time it became active; 0 if never. */
  readonly activatedAt: number;
}

export function projectIdOf(seq: number): string {
  return `prj_${seq}`;
}

/** The seq of a project id, or undefined when the id is not one Engram issued (so it names no project). */
export function projectSeqOf(projectId: string): number | undefined {
  const match = /^prj_([1-9][0-9]{0,14})$/.exec(projectId);
  return match === null ? undefined : Number(match[1]);
}

export function decodeProject(key: Key, value: unknown): ProjectRecord {
  const r = openRecord("resource_projects", key, value, RESOURCE_RECORD_VERSION);
  return {
    v: RESOURCE_RECORD_VERSION,
    seq: r.integer("seq"),
    name: r.string("name"),
    description: r.string("description"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}

export function decodeAgentDefinition(key: Key, value: unknown): AgentDefinitionRecord {
  const r = openRecord("resource_agent_definitions", key, value, RESOURCE_RECORD_VERSION);
  return {
    v: RESOURCE_RECORD_VERSION,
    projectId: r.string("projectId"),
    agentId: r.string("agentId"),
    role: r.string("role"),
    description: r.string("description"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}

export function decodePromptHead(key: Key, value: unknown): PromptHeadRecord {
  const r = openRecord("resource_prompt_heads", key, value, RESOURCE_RECORD_VERSION);
  return { v: RESOURCE_RECORD_VERSION, activeNumber: r.integer("activeNumber"), lastNumber: r.integer("lastNumber") };
}

export function decodePromptVersion(key: Key, value: unknown): PromptVersionRecord {
  const r = openRecord("resource_prompt_versions", key, value, RESOURCE_RECORD_VERSION);
  return {
    v: RESOURCE_RECORD_VERSION,
    versionId: r.string("versionId"),
    projectId: r.string("projectId"),
    agentId: r.string("agentId"),
    number: r.integer("number"),
    content: r.string("content"),
    status: r.oneOf("status", VERSION_STATUSES),
    source: r.oneOf("source", VERSION_SOURCES),
    parentVersionId: r.string("parentVersionId"),
    optimizationSummary: r.string("optimizationSummary"),
    createdAt: r.number("createdAt"),
    activatedAt: r.number("activatedAt"),
  };
}
