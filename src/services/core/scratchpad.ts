// Scratchpad routes: write one entry (staged with `txn_session_id`), read the live entries, clear.
import { callerOf } from "../../auth/principal.js";
import type { CoreData } from "../../core/core-data.js";
import { scratchpadEntryOf } from "../../core/scratchpad-record.js";
import { invalidArgument } from "../../platform/errors.js";
import { bounded, clampLimit, content, parseJson, required } from "../memory/validate.js";
import type { CoreHandlers } from "./core-service.js";

const MAX_METADATA_LABELS = 64;
/** Keeps `timestamp + ttl` a safe integer of milliseconds. */
const MAX_TTL_SECONDS = 100n * 365n * 24n * 3600n;

export function scratchpadHandlers(core: CoreData): CoreHandlers {
  return {
    async writeScratchpad(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = required("session_id", req.sessionId);
      if ((req.content === "") === (req.entryJson === "")) {
        throw invalidArgument("content", `exactly one of content and entry_json is required, got ${req.content === "" ? "neither" : "both"}`);
      }
      const entryJson = content("entry_json", req.entryJson, true);
      if (entryJson !== "") parseJson("entry_json", entryJson);
      if (req.ttlSeconds < 0n) throw invalidArgument("ttl_seconds", "must be 0 (no expiry) or a positive number of seconds");
      if (req.ttlSeconds > MAX_TTL_SECONDS) throw invalidArgument("ttl_seconds", `must be at most ${MAX_TTL_SECONDS} (100 years)`);
      const labels = Object.entries(req.metadata);
      if (labels.length > MAX_METADATA_LABELS) throw invalidArgument("metadata", `at most ${MAX_METADATA_LABELS} labels`);
      for (const [name, value] of labels) {
        bounded("metadata", name);
        content(`metadata.${name}`, value, true);
      }
      const txnSessionId = bounded("txn_session_id", req.txnSessionId);
      const entry = await core.scratchpads.write(
        caller,
        {
          sessionId,
          agentId: bounded("agent_id", req.agentId),
          key: bounded("key", req.key),
          content: content("content", req.content, true),
          entryJson,
          metadata: Object.fromEntries(labels),
          ttlMs: Number(req.ttlSeconds) * 1000,
        },
        txnSessionId,
      );
      return {
        success: true,
        message: txnSessionId === "" ? `entry ${entry.id} written` : `entry ${entry.id} staged in session "${txnSessionId}" (written at commit)`,
        entry: scratchpadEntryOf(entry),
      };
    },

    readScratchpad(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = required("session_id", req.sessionId);
      if (req.afterTimestamp < 0n) throw invalidArgument("after_timestamp", "must be unix milliseconds >= 0");
      const entries = core.scratchpads.read(
        caller,
        sessionId,
        {
          afterTimestamp: Number(req.afterTimestamp),
          key: bounded("key", req.key),
          agentId: bounded("agent_id", req.agentId),
          limit: clampLimit(req.limit, 100, 1000),
        },
        bounded("txn_session_id", req.txnSessionId),
      );
      return { entries: entries.map(scratchpadEntryOf) };
    },

    async clearScratchpad(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = required("session_id", req.sessionId);
      const count = await core.scratchpads.clear(caller, sessionId);
      return { success: true, message: `cleared ${count} entr${count === 1 ? "y" : "ies"} of scratchpad "${sessionId}"`, clearedCount: count };
    },
  };
}
