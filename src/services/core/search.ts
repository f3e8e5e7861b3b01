// SearchNodes: vector search by query text (embedded server-side) or by vector, with top-k, run and metadata filters.
import { callerOf } from "../../auth/principal.js";
import type { CoreData } from "../../core/core-data.js";
import type { JsonValue } from "../../core/node-search.js";
import { invalidArgument } from "../../platform/errors.js";
import { bounded, callerVector, clampLimit, content, jsonObject } from "../memory/validate.js";
import { searchResultOf } from "./core-messages.js";
import type { CoreHandlers } from "./core-service.js";

export function searchHandlers(core: CoreData): CoreHandlers {
  return {
    async searchNodes(req, ctx) {
      const caller = callerOf(ctx);
      const hasText = req.queryText.trim() !== "";
      const hasVector = req.vector.length > 0;
      if (hasText === hasVector) {
        throw invalidArgument("query_text", `exactly one of query_text and vector is required, got ${hasText ? "both" : "neither"}`);
      }
      const text = content("query_text", req.queryText, true);
      const given = callerVector("vector", req.vector, core.embedder.dimensions);
      const filterJson = req.filterJson === "" ? undefined : jsonObject("filter_json", req.filterJson);
      const runId = bounded("run_id", req.runId);
      const sessionId = bounded("session_id", req.sessionId);
      const vector = given ?? (await core.embedder.embed([text]))[0];
      if (vector === undefined) throw new Error("embedder returned no vector");
      const hits = core.search.search(caller, {
        vector,
        k: clampLimit(req.k, 10, 100),
        runId: runId === "" ? undefined : runId,
        filter: filterJson === undefined ? undefined : (JSON.parse(filterJson) as Record<string, JsonValue>),
        sessionId,
      });
      return { results: hits.map(searchResultOf) };
    },
  };
}
