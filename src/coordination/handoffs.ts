// Handoffs between the agents of a run and the feedback that answers them: created `pending`, moved by each verdict
// (see handoff-record.ts), listed with filters and bounded pages. Filed under [owner, run_id, seq]; each write is one
// transaction whose event is published after the commit.
import type { Key } from "lmdb";
import { Code, ConnectError } from "@connectrpc/connect";
import { nextSequence, type Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import type { EventBus } from "../events/event-bus.js";
import { notFound } from "../platform/errors.js";
import {
  HANDOFF_RECORD_VERSION,
  OPEN_STATUSES,
  decodeHandoff,
  handoffIdOf,
  seqOfHandoffId,
  transition,
  type FeedbackRecord,
  type HandoffRecord,
  type HandoffStatus,
  type RequestedAction,
  type Verdict,
} from "./handoff-record.js";
import { runEnd, runRange } from "../storage/key-range.js";

/** Most handoffs one listing page examines, so a page with rare matches still answers promptly. */
export const MAX_EXAMINED_PER_PAGE = 5000;

export interface NewHandoff {
  readonly owner: number;
  readonly runId: string;
  readonly taskId: string;
  readonly fromAgentId: string;
  readonly toAgentId: string;
  readonly content: string;
  readonly requestedAction: RequestedAction;
  readonly entryIds: readonly string[];
  readonly metadataJson: string;
  readonly userId: string;
}

export interface NewFeedback {
  readonly owner: number;
  readonly runId: string;
  readonly handoffId: string;
  readonly verdict: Verdict;
  readonly comments: string;
  readonly fromAgentId: string;
  readonly metadataJson: string;
  readonly userId: string;
}

export interface HandoffFilter {
  readonly toAgentId: string;
  readonly fromAgentId: string;
  /** Empty: every status. */
  readonly statuses: ReadonlySet<HandoffStatus>;
}

export interface HandoffPage {
  readonly handoffs: HandoffRecord[];
  /** Seq to continue after when more may follow; undefined on the last page. */
  readonly nextAfter: number | undefined;
}

export class Handoffs {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #now: () => number;

  constructor(storage: Storage, events: EventBus, now: () => number = Date.now) {
    this.#storage = storage;
    this.#events = events;
    this.#now = now;
  }

  async create(input: NewHandoff): Promise<HandoffRecord> {
    const now = this.#now();
    const record = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const seq = nextSequence(dbs.meta, "handoff");
      const handoff: HandoffRecord = {
        v: HANDOFF_RECORD_VERSION,
        id: handoffIdOf(seq),
        seq,
        ...input,
        entryIds: [...input.entryIds],
        status: "pending",
        createdAt: now,
        updatedAt: now,
        feedback: [],
      };
      dbs.handoffs.put([input.owner, input.runId, seq], handoff);
      return handoff;
    });
    this.#events.publish({
      type: "handoff.created",
      owner: record.owner,
      runId: record.runId,
      agentId: record.fromAgentId,
      payload: JSON.stringify({
        handoff_id: record.id,
        task_id: record.taskId,
        from_agent_id: record.fromAgentId,
        to_agent_id: record.toAgentId,
        requested_action: record.requestedAction,
        status: record.status,
      }),
    });
    return record;
  }

  get(owner: number, runId: string, handoffId: string): HandoffRecord | undefined {
    const seq = seqOfHandoffId(handoffId);
    if (seq === undefined) return undefined;
    const key: Key = [owner, runId, seq];
    return decodeOptional(this.#storage.dbs.handoffs.get(key), (value) => decodeHandoff(key, value));
  }

  /** Stores the feedback on the handoff and moves its status; NOT_FOUND or ABORTED when it cannot. */
  async answer(input: NewFeedback): Promise<{ handoff: HandoffRecord; feedback: FeedbackRecord }> {
    const now = this.#now();
    const result = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const current = this.get(input.owner, input.runId, input.handoffId);
      if (current === undefined) throw notFound(`handoff "${input.handoffId}" in run "${input.runId}"`);
      const status = transition(current.status, input.verdict);
      if (status === undefined) {
        throw new ConnectError(`handoff "${current.id}" is ${current.status}; verdict "${input.verdict}" cannot be given now`, Code.Aborted);
      }
      const feedback: FeedbackRecord = {
        id: `fbk_${nextSequence(dbs.meta, "feedback").toString(36)}`,
        verdict: input.verdict,
        comments: input.comments,
        fromAgentId: input.fromAgentId,
        metadataJson: input.metadataJson,
        userId: input.userId,
        createdAt: now,
      };
      const handoff: HandoffRecord = { ...current, status, updatedAt: now, feedback: [...current.feedback, feedback] };
      dbs.handoffs.put([input.owner, input.runId, current.seq], handoff);
      return { handoff, feedback, previous: current.status };
    });
    this.#events.publish({
      type: "feedback.created",
      owner: input.owner,
      runId: input.runId,
      agentId: input.fromAgentId,
      payload: JSON.stringify({
        feedback_id: result.feedback.id,
        handoff_id: result.handoff.id,
        verdict: result.feedback.verdict,
        from: result.previous,
        handoff_status: result.handoff.status,
        to_agent_id: result.handoff.toAgentId,
        from_agent_id: result.handoff.fromAgentId,
      }),
    });
    return { handoff: result.handoff, feedback: result.feedback };
  }

  /** A page of the run's handoffs matching the filter, oldest first, after seq `after` (0: from the start). */
  list(owner: number, runId: string, filter: HandoffFilter, after: number, limit: number): HandoffPage {
    const handoffs: HandoffRecord[] = [];
    let examined = 0;
    let lastSeq = after;
    for (const { key, value } of this.#storage.dbs.handoffs.getRange({ start: [owner, runId, after + 1], end: runEnd(owner, runId) })) {
      if (handoffs.length === limit || examined === MAX_EXAMINED_PER_PAGE) return { handoffs, nextAfter: lastSeq };
      const handoff = decodeHandoff(key, value);
      examined++;
      lastSeq = handoff.seq;
      if (matches(handoff, filter)) handoffs.push(handoff);
    }
    return { handoffs, nextAfter: undefined };
  }

  /** The open handoffs (pending or acknowledged) addressed to an agent, oldest first, at most `limit`. */
  openFor(owner: number, runId: string, agentId: string, limit: number): HandoffRecord[] {
    return this.list(owner, runId, { toAgentId: agentId, fromAgentId: "", statuses: new Set(OPEN_STATUSES) }, 0, limit).handoffs;
  }

  /** Removes every handoff of a run; call inside a write transaction (run deletion). Returns how many. */
  deleteRunInTransaction(owner: number, runId: string): number {
    const { handoffs } = this.#storage.dbs;
    let removed = 0;
    for (const key of handoffs.getKeys(runRange(owner, runId))) {
      handoffs.remove(key);
      removed++;
    }
    return removed;
  }
}

function matches(handoff: HandoffRecord, filter: HandoffFilter): boolean {
  if (filter.toAgentId !== "" && handoff.toAgentId !== filter.toAgentId) return false;
  if (filter.fromAgentId !== "" && handoff.fromAgentId !== filter.fromAgentId) return false;
  return filter.statuses.size === 0 || filter.statuses.has(handoff.status);
}
