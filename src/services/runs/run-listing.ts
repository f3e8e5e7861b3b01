// GET /v2/control/runs and the request checks of runs/link and runs/unlink: validation, page tokens and the mapping
// of the domain's run summaries (src/runs/run-directory.ts) to RunSummary messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ListRunsRequest, ListRunsResponseSchema } from "../../../gen/engram/v2/runs_service_pb.js";
import { invalidArgument } from "../../platform/errors.js";
import { decodeCursor, encodeCursor } from "../../platform/page-cursor.js";
import type { RunCursor, RunDirectory } from "../../runs/run-directory.js";
import type { RunLinks } from "../../runs/run-links.js";
import { clampLimit, required } from "../memory/validate.js";
import type { RetentionPolicyRecord } from "../../storage/retention-store.js";
import { policyMessage } from "./retention.js";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

export interface ListingDeps {
  readonly directory: RunDirectory;
  readonly links: RunLinks;
  readonly sessionPhase: (owner: number, runId: string) => string | undefined;
  /** The run's own retention policy, shown on the run. */
  readonly retentionOf: (owner: number, runId: string) => RetentionPolicyRecord | undefined;
}

function cursorOf(token: string): RunCursor | undefined {
  if (token === "") return undefined;
  const cursor = decodeCursor(token);
  const at = cursor["t"];
  const runId = cursor["r"];
  if (typeof at !== "number" || !Number.isFinite(at) || typeof runId !== "string") throw invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  return { lastActivityAt: at, runId };
}

export function listRuns(deps: ListingDeps, owner: number, req: ListRunsRequest): MessageInitShape<typeof ListRunsResponseSchema> {
  const page = deps.directory.page(owner, clampLimit(req.limit, DEFAULT_LIMIT, MAX_LIMIT), cursorOf(req.pageToken));
  return {
    runs: page.runs.map((run) => ({
      runId: run.runId,
      entryCount: run.entryCount,
      entryCounts: { ...run.entryCounts },
      linkedRunIds: deps.links.linkedRuns(owner, run.runId),
      agentIds: [...run.agentIds],
      createdAt: new Date(run.createdAt).toISOString(),
      lastActivityAt: new Date(run.lastActivityAt).toISOString(),
      sessionPhase: deps.sessionPhase(owner, run.runId) ?? "",
      retention: policyMessage(deps.retentionOf(owner, run.runId)),
    })),
    nextPageToken: page.next === undefined ? "" : encodeCursor({ t: page.next.lastActivityAt, r: page.next.runId }),
    totalVisible: page.total,
  };
}

/** The parent and child of a link or unlink request: both required, at most 256 bytes, and distinct. */
export function linkedPair(req: { runId: string; linkedRunId: string }): { runId: string; linkedRunId: string } {
  const runId = required("run_id", req.runId);
  const linkedRunId = required("linked_run_id", req.linkedRunId);
  if (runId === linkedRunId) throw invalidArgument("linked_run_id", "must differ from run_id: a run cannot be linked to itself");
  return { runId, linkedRunId };
}
