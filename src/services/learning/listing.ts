// Lesson listing under /v2/control/lessons and /v2/loop/lessons (POST, and GET with query parameters): filters
// validated, pages continued by an opaque cursor bound to the filters it was issued for.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService, ListLessonsRequest } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import { cursorSeq, decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import type { Catalog } from "../../retrieval/catalog.js";
import { IMPORTANCE_LEVELS, LESSON_SCOPES, LESSON_TYPES, PROMOTION_STATES, VALIDATION_STATUSES, type EntryStore } from "../../storage/entry-store.js";
import { listLessons, type LessonFilter } from "../../learning/lesson-listing.js";
import { lessonEntryOf } from "../../learning/lesson-view.js";
import { bounded, oneOf } from "../memory/validate.js";
import { clampedConfidence } from "./confidence.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "listLessons" | "listLoopLessons">;

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;

/** The request fields both listing routes share (ListLoopLessonsRequest has the same fields). */
type ListRequest = Omit<ListLessonsRequest, "$typeName" | "$unknown">;

export function listingHandlers(deps: { entries: EntryStore; catalog: Catalog }): Handlers {
  const list = async (req: ListRequest, owner: number) => {
    const filter: LessonFilter = {
      owner,
      runId: bounded("run_id", req.runId),
      scope: req.scope === "" ? "" : oneOf("scope", req.scope, LESSON_SCOPES, "run"),
      importance: req.importance === "" ? "" : oneOf("importance", req.importance, IMPORTANCE_LEVELS, "medium"),
      lessonType: req.lessonType === "" ? "" : oneOf("lesson_type", req.lessonType, LESSON_TYPES, "observation"),
      validationStatus: req.validationStatus === "" ? "" : oneOf("validation_status", req.validationStatus, VALIDATION_STATUSES, "pending"),
      promotionState: req.promotionState === "" ? "" : oneOf("promotion_state", req.promotionState, PROMOTION_STATES, "proposed"),
      pendingPromotion: req.pendingPromotion,
      excludeStale: req.excludeStale,
      userId: bounded("user_id", req.userId),
      minConfidence: req.minConfidence === undefined ? 0 : clampedConfidence("min_confidence", req.minConfidence),
    };
    const limit = req.limit === 0 ? DEFAULT_LIMIT : Math.min(MAX_LIMIT, req.limit);
    const filters = filtersDigest(JSON.stringify(filter));
    const before = req.pageToken === "" ? undefined : decodeToken(req.pageToken, filters);
    const page = await listLessons(deps.entries, deps.catalog, filter, limit, before);
    return {
      lessons: page.lessons.map(lessonEntryOf),
      nextPageToken: page.nextBefore === undefined ? "" : encodeCursor({ before: page.nextBefore, filters }),
    };
  };
  return {
    listLessons: (req, ctx) => list(req, callerOf(ctx).userId),
    listLoopLessons: (req, ctx) => list(req, callerOf(ctx).userId),
  };
}

/** The seq the next page reads below; throws a 400 naming page_token when the token is not one of these filters'. */
function decodeToken(token: string, filters: string): number {
  const { before, filters: issuedFor } = decodeCursor(token);
  const at = cursorSeq(before);
  if (issuedFor !== filters) throw invalidArgument("page_token", "was issued for other filters; send the same filters with it");
  return at;
}
