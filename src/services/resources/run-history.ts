// Project run-history routes (ListRunHistory, GetRunHistory), adapted to src/resources/run-history.ts.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ResourcesService, RunHistoryRecordSchema } from "../../../gen/engram/v2/resources_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import { cursorSeq, decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import type { RunHistory, RunHistoryCursor, RunHistoryView } from "../../resources/run-history.js";
import { clampLimit, required } from "../memory/validate.js";
import { iso } from "../iso-time.js";

type Handlers = Pick<ServiceImpl<typeof ResourcesService>, "listRunHistory" | "getRunHistory">;

export interface RunHistoryDeps {
  readonly history: RunHistory;
  /** Whether the owner has the project. */
  readonly projectExists: (owner: number, projectId: string) => boolean;
}

export function runHistoryHandlers(deps: RunHistoryDeps): Handlers {
  const projectOf = (owner: number, value: string): string => {
    const projectId = required("project_id", value);
    if (!deps.projectExists(owner, projectId)) throw notFound(`project ${quoted(projectId)}`);
    return projectId;
  };

  return {
    listRunHistory(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = projectOf(owner, req.projectId);
      const after = decodeRunToken(projectId, req.pageToken);
      const page = deps.history.list(owner, projectId, after, clampLimit(req.limit, 50, 500));
      return { runs: page.runs.map(runHistoryMessage), nextPageToken: encodeRunToken(projectId, page.next) };
    },

    getRunHistory(req, ctx) {
      const owner = callerOf(ctx).userId;
      const projectId = projectOf(owner, req.projectId);
      const runId = required("run_id", req.runId);
      const view = deps.history.get(owner, projectId, runId);
      if (view === undefined) throw notFound(`run ${quoted(runId)} of project ${quoted(projectId)}`);
      return { run: runHistoryMessage(view) };
    },
  };
}

function runHistoryMessage(view: RunHistoryView): MessageInitShape<typeof RunHistoryRecordSchema> {
  return {
    runId: view.runId,
    projectId: view.projectId,
    agentIds: [...view.agentIds],
    startedAt: iso(view.startedAt),
    endedAt: iso(view.endedAt),
    lessonsExtracted: view.lessonsExtracted,
    promptChanges: view.promptChanges,
    avgOutcomeScore: view.avgOutcomeScore,
    outcomeCount: view.outcomeCount,
    status: view.status,
    ingestCount: view.ingestCount,
  };
}

/** A token is tied to its project: another project's listing refuses it. */
function encodeRunToken(projectId: string, next: RunHistoryCursor | undefined): string {
  return next === undefined ? "" : encodeCursor({ f: filtersDigest(`runs/${projectId}`), a: next.lastActivityAt, r: next.runId });
}

function decodeRunToken(projectId: string, token: string): RunHistoryCursor | undefined {
  if (token === "") return undefined;
  const cursor = decodeCursor(token);
  if (cursor["f"] !== filtersDigest(`runs/${projectId}`)) throw invalidArgument("page_token", "belongs to another listing; pass a next_page_token unchanged");
  const runId = cursor["r"];
  if (typeof runId !== "string") throw invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  return { lastActivityAt: cursorSeq(cursor["a"]), runId };
}
