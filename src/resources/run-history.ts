// A project's run history: the runs whose control session names the project, each with figures computed on read from
// what the run holds now (entries, lessons, outcomes, prompt changes of the project's agents), so they stay current
// while the run proceeds and nothing has to be kept in step. The rules are written out in resources_service.proto.
import type { ControlSessionRecord } from "../control-sessions/control-session-record.js";
import type { ControlSessionStore } from "../control-sessions/control-session-store.js";
import type { OutcomeStore } from "../learning/outcome-store.js";
import type { Catalog } from "../retrieval/catalog.js";
import type { RunDirectory } from "../runs/run-directory.js";
import type { Storage } from "../storage/database.js";
import { decodePromptVersion } from "./resource-records.js";
import { prefixRange } from "../storage/key-range.js";

/** Runs of one project a listing reads (in run id order) to order them by activity: a bound on one call's work. */
const MAX_PROJECT_RUNS = 10_000;

/** Outcomes of a run read for its figures: the most recent ones, so a read stays bounded. */
export const OUTCOME_SCAN_LIMIT = 10_000;

/** Entry types Engram writes itself or learns: not counted as ingested. */
const NOT_INGESTED = ["lesson", "rule", "checkpoint"] as const;

export type RunHistoryStatus = "active" | "completed" | "failed";

export interface RunHistoryView {
  readonly runId: string;
  readonly projectId: string;
  readonly agentIds: readonly string[];
  /** Unix milliseconds; endedAt 0 while the session is open. */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly lessonsExtracted: number;
  readonly promptChanges: number;
  readonly avgOutcomeScore: number;
  readonly outcomeCount: number;
  readonly status: RunHistoryStatus;
  readonly ingestCount: number;
  /** Newest of the session's creation or close and the run's newest entry: the listing order. */
  readonly lastActivityAt: number;
}

/** Where a page starts: after this run in the listing order (newest activity first, then run id). */
export interface RunHistoryCursor {
  readonly lastActivityAt: number;
  readonly runId: string;
}

export interface RunHistoryPage {
  readonly runs: readonly RunHistoryView[];
  readonly next: RunHistoryCursor | undefined;
}

/** Times at which a prompt version of the project changed: its creation and its last activation (0: never). */
interface PromptChange {
  readonly createdAt: number;
  readonly activatedAt: number;
}

function before(a: RunHistoryCursor, b: RunHistoryCursor): boolean {
  return a.lastActivityAt !== b.lastActivityAt ? a.lastActivityAt > b.lastActivityAt : a.runId < b.runId;
}

export class RunHistory {
  readonly #storage: Storage;
  readonly #catalog: Catalog;
  readonly #directory: RunDirectory;
  readonly #outcomes: OutcomeStore;
  readonly #sessions: ControlSessionStore;

  constructor(deps: { storage: Storage; catalog: Catalog; directory: RunDirectory; outcomes: OutcomeStore; sessions: ControlSessionStore }) {
    this.#storage = deps.storage;
    this.#catalog = deps.catalog;
    this.#directory = deps.directory;
    this.#outcomes = deps.outcomes;
    this.#sessions = deps.sessions;
  }

  /** The owner's run of the project; undefined when the run has no control session of the owner naming the project. */
  get(owner: number, projectId: string, runId: string): RunHistoryView | undefined {
    const session = this.#sessions.get(owner, runId);
    if (session === undefined || session.projectId !== projectId) return undefined;
    return this.#view(session, this.#promptChanges(owner, projectId));
  }

  /**
   * One page of the project's runs, newest activity first. Reads the project's control sessions through their index
   * by project (at most MAX_PROJECT_RUNS) and computes the figures of the page's runs only.
   */
  list(owner: number, projectId: string, after: RunHistoryCursor | undefined, limit: number): RunHistoryPage {
    const candidates: { at: RunHistoryCursor; session: ControlSessionRecord }[] = [];
    for (const runId of this.#sessions.runsOfProject(owner, projectId, MAX_PROJECT_RUNS)) {
      const session = this.#sessions.get(owner, runId);
      if (session === undefined || session.projectId !== projectId) continue;
      const at = { runId: session.runId, lastActivityAt: this.#lastActivityAt(session) };
      if (after !== undefined && !before(after, at)) continue;
      candidates.push({ at, session });
    }
    candidates.sort((a, b) => (before(a.at, b.at) ? -1 : before(b.at, a.at) ? 1 : 0));
    const page = candidates.slice(0, limit);
    const changes = page.length === 0 ? [] : this.#promptChanges(owner, projectId);
    const last = page[page.length - 1];
    return { runs: page.map(({ session }) => this.#view(session, changes)), next: candidates.length > limit && last !== undefined ? last.at : undefined };
  }

  #lastActivityAt(session: ControlSessionRecord): number {
    const run = this.#directory.run(session.owner, session.runId);
    return Math.max(session.createdAt, session.closedAt, run?.lastActivityAt ?? 0);
  }

  #view(session: ControlSessionRecord, changes: readonly PromptChange[]): RunHistoryView {
    const { owner, runId } = session;
    const run = this.#directory.run(owner, runId);
    const agentIds = [...new Set([session.agentId, ...(run?.agentIds ?? [])])].filter((id) => id !== "");
    let ingestCount = run?.entryCount ?? 0;
    for (const type of NOT_INGESTED) ingestCount -= run?.entryCounts[type] ?? 0;
    const outcomes = this.#outcomes.outcomesOfRun(owner, runId, OUTCOME_SCAN_LIMIT);
    const avgOutcomeScore = outcomes.length === 0 ? 0 : outcomes.reduce((sum, o) => sum + o.signal, 0) / outcomes.length;
    const open = this.#sessions.phaseOf(owner, runId) !== "closed";
    const end = open ? Date.now() : session.closedAt;
    const within = (at: number): boolean => at >= session.createdAt && at <= end;
    const promptChanges = changes.filter((c) => within(c.createdAt) || (c.activatedAt !== 0 && within(c.activatedAt))).length;
    return {
      runId,
      projectId: session.projectId,
      agentIds,
      startedAt: session.createdAt,
      endedAt: open ? 0 : session.closedAt,
      lessonsExtracted: this.#catalog.knowledgeSeqs(owner, runId).length,
      promptChanges,
      avgOutcomeScore,
      outcomeCount: outcomes.length,
      status: open ? "active" : outcomes.length > 0 && avgOutcomeScore < 0 ? "failed" : "completed",
      ingestCount: Math.max(0, ingestCount),
      lastActivityAt: Math.max(session.createdAt, session.closedAt, run?.lastActivityAt ?? 0),
    };
  }

  /** Creation and activation times of every prompt version of the project's agents. */
  #promptChanges(owner: number, projectId: string): PromptChange[] {
    const changes: PromptChange[] = [];
    for (const { key, value } of this.#storage.dbs.promptVersions.getRange(prefixRange([owner, projectId]))) {
      const version = decodePromptVersion(key, value);
      changes.push({ createdAt: version.createdAt, activatedAt: version.activatedAt });
    }
    return changes;
  }
}
