// Concept routes: define (stored with a searchable memory entry of the definition) and list.
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import type { Concepts } from "../../planning/concepts.js";
import { conceptMessage } from "../../planning/messages.js";
import { PLANNING_LIMITS } from "../../planning/planning-records.js";
import { bounded, jsonObject, required } from "../memory/validate.js";
import { boundedText, decodeNameToken, encodeNameToken, pageSize } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof PlanningService>, "defineConcept" | "listConcepts">;

export function conceptHandlers(concepts: Concepts): Handlers {
  return {
    async defineConcept(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const name = required("name", req.name);
      const definition = boundedText(req.definition === "" ? "description" : "definition", (req.definition || req.description).trim());
      if (req.relatedConcepts.length > PLANNING_LIMITS.relatedConcepts) {
        throw invalidArgument("related_concepts", `must hold at most ${PLANNING_LIMITS.relatedConcepts} names, got ${req.relatedConcepts.length}`);
      }
      const related = [...new Set(req.relatedConcepts.map((r, i) => bounded(`related_concepts[${i}]`, r.trim())).filter((r) => r !== "" && r !== name))];
      const schemaJson = boundedText("schema_json", jsonObject("schema_json", req.schemaJson));
      const record = await concepts.define({ owner: caller.userId, runId, name, definition, relatedConcepts: related, schemaJson, keyId: caller.keyId });
      return { success: true, concept: conceptMessage(record) };
    },

    listConcepts(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const page = concepts.list(caller.userId, runId, decodeNameToken(runId, req.pageToken), pageSize(req.limit));
      return { concepts: page.concepts.map(conceptMessage), nextPageToken: encodeNameToken(runId, page.nextAfter) };
    },
  };
}
