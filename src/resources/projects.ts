// Projects: named groups of agent definitions and skills, per owner. Deleting a project that still holds agent
// definitions or skills needs `force`; then everything of it goes in the one transaction, through the agent
// definitions and the other resource planes (skills) handed in as `ProjectPlane`s.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Key } from "lmdb";
import { notFound, quoted } from "../platform/errors.js";
import { nextSequence, type Storage } from "../storage/database.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import type { EventBus } from "../events/event-bus.js";
import { RESOURCE_RECORD_VERSION, decodeProject, projectIdOf, projectSeqOf, type ProjectRecord } from "./resource-records.js";
import type { AgentDefinitions } from "./agent-definitions.js";

/**
 * Another plane of resources that belong to a project (the skills): counted before a project is deleted, deleted with
 * it (or with one agent definition) inside the caller's transaction.
 */
export interface ProjectPlane {
  /** What the plane holds, as the refusal names it (e.g. `skills`). */
  readonly name: string;
  countOfProject(owner: number, projectId: string): number;
  deleteOfProjectInTransaction(owner: number, projectId: string): number;
  deleteOfAgentInTransaction(owner: number, projectId: string, agentId: string): number;
}

export interface ProjectView {
  readonly projectId: string;
  readonly record: ProjectRecord;
  /** Its agent definitions' ids, sorted. */
  readonly agentIds: readonly string[];
}

export interface ProjectPage {
  readonly projects: readonly ProjectView[];
  /** Seq to continue below; undefined on the last page. */
  readonly nextBelow: number | undefined;
}

export interface ProjectDeletion {
  readonly agentDefinitions: number;
  readonly promptVersions: number;
  /** Per plane name, what went (e.g. `{ skills: 2 }`). */
  readonly planes: Readonly<Record<string, number>>;
}

export class Projects {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #agents: AgentDefinitions;
  readonly #planes: readonly ProjectPlane[];

  constructor(storage: Storage, events: EventBus, agents: AgentDefinitions, planes: readonly ProjectPlane[]) {
    this.#storage = storage;
    this.#events = events;
    this.#agents = agents;
    this.#planes = planes;
    checkVersions("resource_projects", storage.dbs.projects, RESOURCE_RECORD_VERSION);
    checkVersions("resource_agent_definitions", storage.dbs.agentDefinitions, RESOURCE_RECORD_VERSION);
  }

  async create(owner: number, name: string, description: string): Promise<ProjectView> {
    const view = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      if (dbs.projectNames.get([owner, name]) !== undefined) throw nameTaken(name);
      const seq = nextSequence(dbs.meta, "project");
      const now = Date.now();
      const record: ProjectRecord = { v: RESOURCE_RECORD_VERSION, seq, name, description, createdAt: now, updatedAt: now };
      dbs.projects.put([owner, seq], record);
      dbs.projectNames.put([owner, name], seq);
      return { projectId: projectIdOf(seq), record, agentIds: [] };
    });
    this.#announce("project.created", owner, { project_id: view.projectId, name });
    return view;
  }

  get(owner: number, projectId: string): ProjectView | undefined {
    const record = this.read(owner, projectId);
    return record === undefined ? undefined : { projectId, record, agentIds: this.#agents.idsOf(owner, projectId) };
  }

  /** Whether the caller has this project (for the other resource planes). */
  exists(owner: number, projectId: string): boolean {
    return this.read(owner, projectId) !== undefined;
  }

  /** Newest first, below `below` (exclusive; undefined: from the newest). */
  list(owner: number, below: number | undefined, limit: number): ProjectPage {
    const projects: ProjectView[] = [];
    let nextBelow: number | undefined;
    const start: Key = [owner, below === undefined ? Infinity : below - 0.5];
    for (const { key, value } of this.#storage.dbs.projects.getRange({ start, end: [owner, 0], reverse: true })) {
      const record = decodeProject(key, value);
      if (projects.length === limit) {
        nextBelow = projects[projects.length - 1]?.record.seq;
        break;
      }
      const projectId = projectIdOf(record.seq);
      projects.push({ projectId, record, agentIds: this.#agents.idsOf(owner, projectId) });
    }
    return { projects, nextBelow };
  }

  async update(owner: number, projectId: string, change: { readonly name?: string; readonly description?: string }): Promise<ProjectView> {
    const view = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const current = this.read(owner, projectId);
      if (current === undefined) throw notFound(`project ${quoted(projectId)}`);
      const name = change.name ?? current.name;
      if (name !== current.name) {
        if (dbs.projectNames.get([owner, name]) !== undefined) throw nameTaken(name);
        dbs.projectNames.remove([owner, current.name]);
        dbs.projectNames.put([owner, name], current.seq);
      }
      const record: ProjectRecord = { ...current, name, description: change.description ?? current.description, updatedAt: Date.now() };
      dbs.projects.put([owner, current.seq], record);
      return { projectId, record, agentIds: this.#agents.idsOf(owner, projectId) };
    });
    this.#announce("project.updated", owner, { project_id: projectId, name: view.record.name });
    return view;
  }

  /** Deletes a project; one holding agent definitions or skills only with `force`, then with all of them. */
  async delete(owner: number, projectId: string, force: boolean): Promise<ProjectDeletion> {
    const result = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const current = this.read(owner, projectId);
      if (current === undefined) throw notFound(`project ${quoted(projectId)}`);
      const agentIds = this.#agents.idsOf(owner, projectId);
      if (!force) {
        const held = [`${agentIds.length} agent definitions`, ...this.#planes.map((p) => `${p.countOfProject(owner, projectId)} ${p.name}`)];
        if (agentIds.length > 0 || this.#planes.some((p) => p.countOfProject(owner, projectId) > 0)) {
          throw new ConnectError(`project ${quoted(projectId)} still holds ${held.join(" and ")}; delete them first or pass force = true`, Code.FailedPrecondition);
        }
      }
      let promptVersions = 0;
      for (const agentId of agentIds) promptVersions += this.#agents.deleteInTransaction(owner, projectId, agentId);
      const planes: Record<string, number> = {};
      for (const plane of this.#planes) planes[plane.name] = plane.deleteOfProjectInTransaction(owner, projectId);
      dbs.projects.remove([owner, current.seq]);
      dbs.projectNames.remove([owner, current.name]);
      return { agentDefinitions: agentIds.length, promptVersions, planes };
    });
    this.#announce("project.deleted", owner, { project_id: projectId, agent_definitions: result.agentDefinitions, prompt_versions: result.promptVersions });
    return result;
  }

  read(owner: number, projectId: string): ProjectRecord | undefined {
    const seq = projectSeqOf(projectId);
    if (seq === undefined) return undefined;
    const key = [owner, seq];
    return decodeOptional(this.#storage.dbs.projects.get(key), (value) => decodeProject(key, value));
  }

  #announce(type: string, owner: number, payload: Record<string, unknown>): void {
    this.#events.publish({ type, owner, runId: "", agentId: "", payload: JSON.stringify(payload) });
  }
}

function nameTaken(name: string): ConnectError {
  return new ConnectError(`you already have a project named ${quoted(name)}`, Code.AlreadyExists);
}
