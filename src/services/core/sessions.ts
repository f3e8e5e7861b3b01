// Transactional session routes: create (optionally nested), commit (refusing conflicts unless a merge strategy is
// named), drop, snapshot under a name, load a snapshot. Commit and snapshot also take the session as `session_id`.
import { callerOf } from "../../auth/principal.js";
import type { CoreData } from "../../core/core-data.js";
import { isoTime } from "../../core/node-record.js";
import { MERGE_STRATEGIES, type MergeStrategy } from "../../core/session-commit.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { bounded, required } from "../memory/validate.js";
import type { CoreHandlers } from "./core-service.js";

/** Snapshot names are LMDB keys, never file paths. */
const SNAPSHOT_NAME = /^[A-Za-z0-9._-]{1,128}$/;

function snapshotName(field: string, value: string): string {
  if (!SNAPSHOT_NAME.test(value)) {
    throw invalidArgument(field, "must be a snapshot name: 1-128 letters, digits, '.', '-' or '_' (not a file path)");
  }
  return value;
}

function mergeStrategy(value: string): MergeStrategy {
  if (value === "") return "refuse";
  const match = MERGE_STRATEGIES.find((s) => s === value.toLowerCase());
  if (match === undefined) {
    throw invalidArgument("merge_strategy", `must be empty (refuse conflicts) or one of ${MERGE_STRATEGIES.join(", ")}; got ${quoted(value)}`);
  }
  return match;
}

/**
 * The session a commit or snapshot names: `id` (the path parameter over HTTP) or `session_id`, which older clients send
 * in the body as well; when both are set they must agree.
 */
function sessionIdOf(req: { readonly id: string; readonly sessionId: string }): string {
  if (req.id !== "" && req.sessionId !== "" && req.id !== req.sessionId) {
    throw invalidArgument("session_id", `is ${quoted(req.sessionId)} but the request names session ${quoted(req.id)} as id; send one of them, or the same value`);
  }
  return req.id !== "" ? required("id", req.id) : required("session_id", req.sessionId);
}

export function sessionHandlers(core: CoreData): CoreHandlers {
  return {
    async createCoreSession(req, ctx) {
      const session = await core.lifecycle.create(callerOf(ctx), bounded("parent_session_id", req.parentSessionId));
      return { sessionId: session.id, createdAt: isoTime(session.createdAt) };
    },

    async commitCoreSession(req, ctx) {
      const id = sessionIdOf(req);
      const outcome = await core.commit(callerOf(ctx), id, mergeStrategy(req.mergeStrategy));
      return { success: true, appliedWrites: outcome.applied, skippedWrites: outcome.skipped };
    },

    async dropCoreSession(req, ctx) {
      await core.lifecycle.drop(callerOf(ctx), required("id", req.id));
      return { success: true };
    },

    async snapshotCoreSession(req, ctx) {
      const id = sessionIdOf(req);
      const name = req.path === "" ? `${id}-${Date.now()}` : snapshotName("path", req.path);
      const outcome = await core.lifecycle.snapshot(callerOf(ctx), id, name);
      return { success: true, path: outcome.name, writeCount: outcome.writeCount };
    },

    async loadCoreSession(req, ctx) {
      const name = snapshotName("path", required("path", req.path));
      const session = await core.lifecycle.load(callerOf(ctx), name);
      return { sessionId: session.id };
    },
  };
}
