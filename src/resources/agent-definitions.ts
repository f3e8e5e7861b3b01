// Agent definitions inside a project: role, description and a prompt, whose versions live in `Prompts`. Writes go in
// one transaction with the prompt version they create; deleting a definition takes its versions and the skills
// bound to it (through the `ProjectPlane`s) along.
import { Code, ConnectError } from "@connectrpc/connect";
import { notFound, quoted } from "../platform/errors.js";
import type { Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import type { EventBus } from "../events/event-bus.js";
import { RESOURCE_RECORD_VERSION, decodeAgentDefinition, projectSeqOf, type AgentDefinitionRecord, type PromptVersionRecord } from "./resource-records.js";
import type { Prompts } from "./prompts.js";
import type { ProjectPlane } from "./projects.js";
import { prefixRange } from "../storage/key-range.js";

/** Engram design: agent definitions one project may hold. */
export const MAX_AGENTS_PER_PROJECT = 500;

export interface AgentDefinitionView {
  readonly record: AgentDefinitionRecord;
  readonly activePrompt: PromptVersionRecord | undefined;
}

export interface AgentInput {
  readonly role: string;
  readonly description: string;
  readonly systemPromptContent: string;
}

export interface AgentChange {
  readonly role?: string;
  readonly description?: string;
  readonly systemPromptContent?: string;
}

export class AgentDefinitions {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #prompts: Prompts;
  #planes: readonly ProjectPlane[] = [];

  constructor(storage: Storage, events: EventBus, prompts: Prompts) {
    this.#storage = storage;
    this.#events = events;
    this.#prompts = prompts;
  }

  /** The planes whose records bound to an agent go with its definition (set once, at wiring). */
  usePlanes(planes: readonly ProjectPlane[]): void {
    this.#planes = planes;
  }

  async create(owner: number, projectId: string, agentId: string, input: AgentInput): Promise<AgentDefinitionView> {
    const { view, prompt } = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      this.#requireProject(owner, projectId);
      if (dbs.agentDefinitions.get([owner, projectId, agentId]) !== undefined) {
        throw new ConnectError(`project ${quoted(projectId)} already has agent ${quoted(agentId)}`, Code.AlreadyExists);
      }
      if (this.idsOf(owner, projectId).length >= MAX_AGENTS_PER_PROJECT) {
        throw new ConnectError(`project ${quoted(projectId)} already has ${MAX_AGENTS_PER_PROJECT} agent definitions`, Code.ResourceExhausted);
      }
      const now = Date.now();
      const record: AgentDefinitionRecord = { v: RESOURCE_RECORD_VERSION, projectId, agentId, role: input.role, description: input.description, createdAt: now, updatedAt: now };
      dbs.agentDefinitions.put([owner, projectId, agentId], record);
      dbs.agentDefinitionsByAgent.put([owner, agentId, projectId], null);
      const ref = { owner, projectId, agentId };
      const written = input.systemPromptContent === "" ? undefined : this.#prompts.writeVersionInTransaction(ref, { content: input.systemPromptContent, source: "manual", activate: true });
      return { view: { record, activePrompt: written?.version }, prompt: written };
    });
    this.#announce("agent_definition.created", owner, projectId, agentId);
    if (prompt !== undefined) this.#prompts.announce(owner, prompt, true);
    return view;
  }

  get(owner: number, projectId: string, agentId: string): AgentDefinitionView | undefined {
    const record = this.#read(owner, projectId, agentId);
    return record === undefined ? undefined : { record, activePrompt: this.#prompts.active({ owner, projectId, agentId }) };
  }

  /** The project's agent definitions by agent id; undefined when the project does not exist. */
  list(owner: number, projectId: string): AgentDefinitionView[] | undefined {
    if (!this.#projectExists(owner, projectId)) return undefined;
    const views: AgentDefinitionView[] = [];
    for (const { key, value } of this.#storage.dbs.agentDefinitions.getRange(prefixRange([owner, projectId]))) {
      const record = decodeAgentDefinition(key, value);
      views.push({ record, activePrompt: this.#prompts.active({ owner, projectId, agentId: record.agentId }) });
    }
    return views;
  }

  exists(owner: number, projectId: string, agentId: string): boolean {
    return this.#storage.dbs.agentDefinitions.get([owner, projectId, agentId]) !== undefined;
  }

  idsOf(owner: number, projectId: string): string[] {
    return [...this.#storage.dbs.agentDefinitions.getKeys(prefixRange([owner, projectId]))].map((key) => (key as [number, string, string])[2]);
  }

  async update(owner: number, projectId: string, agentId: string, change: AgentChange): Promise<AgentDefinitionView> {
    const { view, prompt } = await this.#storage.transaction(() => {
      const current = this.#read(owner, projectId, agentId);
      if (current === undefined) throw notFound(`agent ${quoted(agentId)} in project ${quoted(projectId)}`);
      const ref = { owner, projectId, agentId };
      const record: AgentDefinitionRecord = { ...current, role: change.role ?? current.role, description: change.description ?? current.description, updatedAt: Date.now() };
      this.#storage.dbs.agentDefinitions.put([owner, projectId, agentId], record);
      const active = this.#prompts.active(ref);
      const content = change.systemPromptContent;
      const written = content === undefined || content === "" || content === active?.content ? undefined : this.#prompts.writeVersionInTransaction(ref, { content, source: "manual", activate: true });
      return { view: { record, activePrompt: written?.version ?? active }, prompt: written };
    });
    this.#announce("agent_definition.updated", owner, projectId, agentId);
    if (prompt !== undefined) this.#prompts.announce(owner, prompt, true);
    return view;
  }

  async delete(owner: number, projectId: string, agentId: string): Promise<void> {
    await this.#storage.transaction(() => {
      if (this.#read(owner, projectId, agentId) === undefined) throw notFound(`agent ${quoted(agentId)} in project ${quoted(projectId)}`);
      this.deleteInTransaction(owner, projectId, agentId);
    });
    this.#announce("agent_definition.deleted", owner, projectId, agentId);
  }

  /** Inside a transaction: removes a definition, its prompt versions and what the planes bind to it; returns the versions removed. */
  deleteInTransaction(owner: number, projectId: string, agentId: string): number {
    const { dbs } = this.#storage;
    dbs.agentDefinitions.remove([owner, projectId, agentId]);
    dbs.agentDefinitionsByAgent.remove([owner, agentId, projectId]);
    for (const plane of this.#planes) plane.deleteOfAgentInTransaction(owner, projectId, agentId);
    return this.#prompts.deleteAgentInTransaction({ owner, projectId, agentId });
  }

  #read(owner: number, projectId: string, agentId: string): AgentDefinitionRecord | undefined {
    const key = [owner, projectId, agentId];
    return decodeOptional(this.#storage.dbs.agentDefinitions.get(key), (value) => decodeAgentDefinition(key, value));
  }

  #projectExists(owner: number, projectId: string): boolean {
    const seq = projectSeqOf(projectId);
    return seq !== undefined && this.#storage.dbs.projects.get([owner, seq]) !== undefined;
  }

  #requireProject(owner: number, projectId: string): void {
    if (!this.#projectExists(owner, projectId)) throw notFound(`project ${quoted(projectId)}`);
  }

  #announce(type: string, owner: number, projectId: string, agentId: string): void {
    this.#events.publish({ type, owner, runId: "", agentId, payload: JSON.stringify({ project_id: projectId, agent_id: agentId }) });
  }
}
