// Versioned system prompts of agents: writing versions, the state machine (candidate → active → retired, candidates
// passed over → archived, rollback copies), owner resolution, listings and diffs. Every state change reads and swaps
// the agent's prompt head inside one LMDB transaction, so an agent never has two active versions, however many
// activations race.
import { Code, ConnectError } from "@connectrpc/connect";
import { createTwoFilesPatch } from "diff";
import type { Key } from "lmdb";
import { invalidArgument, notFound, quoted } from "../platform/errors.js";
import { nextSequence, type Storage } from "../storage/database.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import type { EventBus } from "../events/event-bus.js";
import {
  RESOURCE_RECORD_VERSION,
  decodePromptHead,
  decodePromptVersion,
  type PromptHeadRecord,
  type PromptVersionRecord,
  type VersionSource,
  type VersionStatus,
} from "./resource-records.js";
import { prefixRange } from "../storage/key-range.js";

/** One agent's prompt: the caller, the agent's project ("" for a project-less agent) and the agent id. */
export interface AgentRef {
  readonly owner: number;
  readonly projectId: string;
  readonly agentId: string;
}

export interface NewVersion {
  readonly content: string;
  readonly source: VersionSource;
  readonly activate: boolean;
  readonly parentVersionId?: string;
  readonly optimizationSummary?: string;
}

/** What an activation changed. */
export interface Activation {
  readonly version: PromptVersionRecord;
  /** Id of the version that was active before; "" when none or when nothing changed. */
  readonly retiredVersionId: string;
  readonly archivedVersionIds: readonly string[];
  /** False when the version was already active. */
  readonly changed: boolean;
}

export interface VersionPage {
  readonly versions: readonly PromptVersionRecord[];
  /** Version number to continue below; undefined on the last page. */
  readonly nextBelow: number | undefined;
}

export class Prompts {
  readonly #storage: Storage;
  readonly #events: EventBus;

  constructor(storage: Storage, events: EventBus) {
    this.#storage = storage;
    this.#events = events;
    // Records written by a newer build stop start-up rather than failing one request at a time.
    checkVersions("resource_prompt_heads", storage.dbs.promptHeads, RESOURCE_RECORD_VERSION);
    checkVersions("resource_prompt_versions", storage.dbs.promptVersions, RESOURCE_RECORD_VERSION);
  }

  /**
   * The project of the caller's agent `agentId`: `projectId` when given (it must define the agent), else the one
   * project defining it, else "" (a project-less agent). Several projects defining it: INVALID_ARGUMENT.
   */
  resolveProject(owner: number, agentId: string, projectId: string): string {
    const dbs = this.#storage.dbs;
    if (projectId !== "") {
      if (dbs.agentDefinitions.get([owner, projectId, agentId]) === undefined) throw notFound(`agent ${quoted(agentId)} in project ${quoted(projectId)}`);
      return projectId;
    }
    const found = [...dbs.agentDefinitionsByAgent.getKeys({ ...prefixRange([owner, agentId]), limit: 2 })];
    if (found.length > 1) throw invalidArgument("project_id", `is required: several of your projects define agent ${quoted(agentId)}`);
    const only = found[0] as [number, string, string] | undefined;
    return only === undefined ? "" : only[2];
  }

  /** Writes a version (resolving the agent inside the transaction) and announces it. */
  async set(owner: number, agentId: string, projectId: string, input: NewVersion): Promise<Activation> {
    const result = await this.#storage.transaction(() => {
      const ref = { owner, agentId, projectId: this.resolveProject(owner, agentId, projectId) };
      return this.writeVersionInTransaction(ref, input);
    });
    this.announce(owner, result, true);
    return result;
  }

  /**
   * Inside a transaction: writes a new version; `activate` makes it active at once (the previous active version
   * becomes `retired`, older candidates `archived`), otherwise it is a `candidate`.
   */
  writeVersionInTransaction(ref: AgentRef, input: NewVersion): Activation {
    const dbs = this.#storage.dbs;
    const head = this.#head(ref) ?? { v: RESOURCE_RECORD_VERSION, activeNumber: 0, lastNumber: 0 };
    const number = head.lastNumber + 1;
    const version: PromptVersionRecord = {
      v: RESOURCE_RECORD_VERSION,
      versionId: `pv_${nextSequence(dbs.meta, "prompt_version")}`,
      projectId: ref.projectId,
      agentId: ref.agentId,
      number,
      content: input.content,
      status: "candidate",
      source: input.source,
      parentVersionId: input.parentVersionId ?? this.#versionAt(ref, head.activeNumber)?.versionId ?? "",
      optimizationSummary: input.optimizationSummary ?? "",
      createdAt: Date.now(),
      activatedAt: 0,
    };
    dbs.promptVersions.put(versionKey(ref, number), version);
    const nextHead: PromptHeadRecord = { ...head, lastNumber: number };
    dbs.promptHeads.put(headKey(ref), nextHead);
    if (!input.activate) return { version, retiredVersionId: "", archivedVersionIds: [], changed: true };
    return this.#promote(ref, nextHead, version);
  }

  /**
   * Activates a version: a candidate in place; a retired or archived one by copying it into a new active version
   * (source `rollback`); the active one is left as is.
   */
  async activate(owner: number, agentId: string, projectId: string, versionId: string): Promise<Activation> {
    const result = await this.#storage.transaction(() => {
      const ref = { owner, agentId, projectId: this.resolveProject(owner, agentId, projectId) };
      const target = this.findVersion(ref, versionId);
      if (target === undefined) throw notFound(`prompt version ${quoted(versionId)} of agent ${quoted(agentId)}`);
      const head = this.#head(ref);
      if (head === undefined) throw notFound(`agent ${quoted(agentId)}`);
      if (target.status === "active") return { version: target, retiredVersionId: "", archivedVersionIds: [], changed: false };
      if (target.status === "candidate") return this.#promote(ref, head, target);
      const copy = this.writeVersionInTransaction(ref, { content: target.content, source: "rollback", activate: true, parentVersionId: target.versionId });
      return copy;
    });
    if (result.changed) this.announce(owner, result, result.version.source === "rollback");
    return result;
  }

  /** Publishes the events of a committed write. */
  announce(owner: number, result: Activation, created: boolean): void {
    const v = result.version;
    if (created) {
      this.#events.publish({
        type: "prompt.version.created",
        owner,
        runId: "",
        agentId: v.agentId,
        payload: JSON.stringify({ project_id: v.projectId, agent_id: v.agentId, version_id: v.versionId, version_number: v.number, status: v.status, source: v.source }),
      });
    }
    if (v.status === "active" && result.changed) {
      this.#events.publish({
        type: "prompt.version.activated",
        owner,
        runId: "",
        agentId: v.agentId,
        payload: JSON.stringify({ project_id: v.projectId, agent_id: v.agentId, version_id: v.versionId, retired_version_id: result.retiredVersionId, archived_version_ids: result.archivedVersionIds }),
      });
    }
  }

  /** Whether the agent has any prompt record (a project-less agent exists only through its versions). */
  hasPrompt(ref: AgentRef): boolean {
    return this.#head(ref) !== undefined;
  }

  active(ref: AgentRef): PromptVersionRecord | undefined {
    const head = this.#head(ref);
    return head === undefined ? undefined : this.#versionAt(ref, head.activeNumber);
  }

  findVersion(ref: AgentRef, versionId: string): PromptVersionRecord | undefined {
    for (const { key, value } of this.#storage.dbs.promptVersions.getRange(agentRange(ref))) {
      const version = decodePromptVersion(key, value);
      if (version.versionId === versionId) return version;
    }
    return undefined;
  }

  /** Versions newest first, below version number `below` (exclusive; undefined: from the newest). */
  list(ref: AgentRef, status: VersionStatus | undefined, below: number | undefined, limit: number): VersionPage {
    const versions: PromptVersionRecord[] = [];
    let nextBelow: number | undefined;
    const start = [ref.owner, ref.projectId, ref.agentId, below === undefined ? Infinity : below - 0.5];
    for (const { key, value } of this.#storage.dbs.promptVersions.getRange({ start, end: [ref.owner, ref.projectId, ref.agentId, 0], reverse: true })) {
      const version = decodePromptVersion(key, value);
      if (status !== undefined && version.status !== status) continue;
      if (versions.length === limit) {
        nextBelow = versions[versions.length - 1]?.number;
        break;
      }
      versions.push(version);
    }
    return { versions, nextBelow };
  }

  /** A unified diff from version A to version B ("" when their contents are equal). */
  diff(a: PromptVersionRecord, b: PromptVersionRecord): string {
    if (a.content === b.content) return "";
    const text = (s: string): string => (s.endsWith("\n") ? s : `${s}\n`);
    return createTwoFilesPatch(a.versionId, b.versionId, text(a.content), text(b.content), `version ${a.number}`, `version ${b.number}`);
  }

  /** Inside a transaction: deletes an agent's versions and head; returns how many versions went. */
  deleteAgentInTransaction(ref: AgentRef): number {
    const dbs = this.#storage.dbs;
    let count = 0;
    for (const key of [...dbs.promptVersions.getKeys(agentRange(ref))]) {
      dbs.promptVersions.remove(key);
      count++;
    }
    dbs.promptHeads.remove(headKey(ref));
    return count;
  }

  /** Makes `target` the active version; retires the previous one and archives the candidates older than `target`. */
  #promote(ref: AgentRef, head: PromptHeadRecord, target: PromptVersionRecord): Activation {
    const dbs = this.#storage.dbs;
    const now = Date.now();
    const previous = head.activeNumber === target.number ? undefined : this.#versionAt(ref, head.activeNumber);
    if (previous !== undefined) dbs.promptVersions.put(versionKey(ref, previous.number), { ...previous, status: "retired" });
    const archived: string[] = [];
    for (const { key, value } of dbs.promptVersions.getRange({ start: [ref.owner, ref.projectId, ref.agentId, 0], end: [ref.owner, ref.projectId, ref.agentId, target.number] })) {
      const version = decodePromptVersion(key, value);
      if (version.status !== "candidate") continue;
      dbs.promptVersions.put(key, { ...version, status: "archived" });
      archived.push(version.versionId);
    }
    const active: PromptVersionRecord = { ...target, status: "active", activatedAt: now };
    dbs.promptVersions.put(versionKey(ref, target.number), active);
    dbs.promptHeads.put(headKey(ref), { ...head, activeNumber: target.number });
    return { version: active, retiredVersionId: previous?.versionId ?? "", archivedVersionIds: archived, changed: true };
  }

  #head(ref: AgentRef): PromptHeadRecord | undefined {
    const key = headKey(ref);
    return decodeOptional(this.#storage.dbs.promptHeads.get(key), (value) => decodePromptHead(key, value));
  }

  #versionAt(ref: AgentRef, number: number): PromptVersionRecord | undefined {
    if (number === 0) return undefined;
    const key = versionKey(ref, number);
    const version = decodeOptional(this.#storage.dbs.promptVersions.get(key), (value) => decodePromptVersion(key, value));
    if (version === undefined) throw new ConnectError(`prompt head of agent ${quoted(ref.agentId)} names a missing version`, Code.DataLoss);
    return version;
  }
}

function headKey(ref: AgentRef): Key {
  return [ref.owner, ref.projectId, ref.agentId];
}

function versionKey(ref: AgentRef, number: number): Key {
  return [ref.owner, ref.projectId, ref.agentId, number];
}

function agentRange(ref: AgentRef): { start: Key; end: Key } {
  return { start: [ref.owner, ref.projectId, ref.agentId, 0], end: [ref.owner, ref.projectId, ref.agentId, Infinity] };
}
