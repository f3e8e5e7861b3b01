// The handoff record (a task handed from one agent to another, with the feedback it received), its decoder, and the
// state machine feedback moves it through (written out in coordination_service.proto).
import { openRecord, type RecordReader } from "../storage/record-codec.js";

export const HANDOFF_RECORD_VERSION = 1;

export const REQUESTED_ACTIONS = ["continue", "review", "approve", "execute"] as const;
export type RequestedAction = (typeof REQUESTED_ACTIONS)[number];
export const VERDICTS = ["approve", "request_changes", "block", "acknowledge"] as const;
export type Verdict = (typeof VERDICTS)[number];
export const HANDOFF_STATUSES = ["pending", "acknowledged", "approved", "changes_requested", "blocked"] as const;
export type HandoffStatus = (typeof HANDOFF_STATUSES)[number];

/** The status each verdict moves a handoff to. */
const STATUS_AFTER: Readonly<Record<Verdict, HandoffStatus>> = {
  acknowledge: "acknowledged",
  approve: "approved",
  request_changes: "changes_requested",
  block: "blocked",
};

/** Statuses in which a handoff still awaits an answer. */
export const OPEN_STATUSES: readonly HandoffStatus[] = ["pending", "acknowledged"];

/** The handoff's status after the verdict, or undefined when the verdict may not be given in `status`. */
export function transition(status: HandoffStatus, verdict: Verdict): HandoffStatus | undefined {
  if (!OPEN_STATUSES.includes(status)) return undefined;
  if (status === "acknowledged" && verdict === "acknowledge") return undefined;
  return STATUS_AFTER[verdict];
}

export interface FeedbackRecord {
  readonly id: string;
  readonly verdict: Verdict;
  readonly comments: string;
  readonly fromAgentId: string;
  readonly metadataJson: string;
  readonly userId: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
}

export interface HandoffRecord {
  readonly v: typeof HANDOFF_RECORD_VERSION;
  readonly id: string;
  readonly seq: number;
  readonly owner: number;
  readonly runId: string;
  readonly taskId: string;
  readonly fromAgentId: string;
  readonly toAgentId: string;
  readonly content: string;
  readonly requestedAction: RequestedAction;
  readonly status: HandoffStatus;
  readonly entryIds: readonly string[];
  readonly metadataJson: string;
  readonly userId: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Oldest first; at most two (an acknowledgement and a closing verdict). */
  readonly feedback: readonly FeedbackRecord[];
}

export function handoffIdOf(seq: number): string {
  return `hof_${seq.toString(36)}`;
}

/** The seq a handoff id names, or undefined when it is not a handoff id. */
export function seqOfHandoffId(id: string): number | undefined {
  const match = /^hof_([0-9a-z]{1,11})$/.exec(id);
  if (match === null) return undefined;
  const seq = parseInt(match[1] as string, 36);
  return Number.isSafeInteger(seq) ? seq : undefined;
}

function decodeFeedback(r: RecordReader): FeedbackRecord {
  return {
    id: r.string("id"),
    verdict: r.oneOf("verdict", VERDICTS),
    comments: r.string("comments"),
    fromAgentId: r.string("fromAgentId"),
    metadataJson: r.string("metadataJson"),
    userId: r.string("userId"),
    createdAt: r.number("createdAt"),
  };
}

export function decodeHandoff(key: unknown, value: unknown): HandoffRecord {
  const r = openRecord("coordination_handoffs", key, value, HANDOFF_RECORD_VERSION);
  return {
    v: HANDOFF_RECORD_VERSION,
    id: r.string("id"),
    seq: r.integer("seq"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    taskId: r.string("taskId"),
    fromAgentId: r.string("fromAgentId"),
    toAgentId: r.string("toAgentId"),
    content: r.string("content"),
    requestedAction: r.oneOf("requestedAction", REQUESTED_ACTIONS),
    status: r.oneOf("status", HANDOFF_STATUSES),
    entryIds: r.strings("entryIds"),
    metadataJson: r.string("metadataJson"),
    userId: r.string("userId"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
    feedback: r.objects("feedback").map(decodeFeedback),
  };
}
