// Variable routes: set (with compare-and-set), get, list and delete, adapted to src/planning/variables.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { notFound, quoted } from "../../platform/errors.js";
import { variableMessage } from "../../planning/messages.js";
import { VARIABLE_SOURCES } from "../../planning/planning-records.js";
import type { Variables } from "../../planning/variables.js";
import { oneOf, required } from "../memory/validate.js";
import { decodeNameToken, encodeNameToken, expectedVersion, jsonValue, pageSize } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof PlanningService>, "setVariable" | "getVariable" | "listVariables" | "deleteVariable">;

export function variableHandlers(variables: Variables): Handlers {
  return {
    async setVariable(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const name = required("name", req.name);
      const value = jsonValue("value_json", req.valueJson);
      const record = await variables.set({
        owner: caller.userId,
        runId,
        name,
        valueJson: value.text,
        varType: value.varType,
        source: oneOf("source", req.source, VARIABLE_SOURCES, "explicit"),
        expectedVersion: expectedVersion(req.expectedVersion),
      });
      return { success: true, variable: variableMessage(record) };
    },

    async getVariable(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const name = required("name", req.name);
      const record = await variables.get(caller.userId, runId, name);
      if (record === undefined) throw notFound(`variable ${quoted(name)} in run ${quoted(runId)}`);
      const { $typeName: _typeName, ...fields } = variableMessage(record);
      return fields;
    },

    listVariables(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const page = variables.list(caller.userId, runId, decodeNameToken(runId, req.pageToken), pageSize(req.limit));
      return { variables: page.variables.map(variableMessage), nextPageToken: encodeNameToken(runId, page.nextAfter) };
    },

    async deleteVariable(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const name = required("name", req.name);
      const deleted = await variables.delete(caller.userId, runId, name, expectedVersion(req.expectedVersion));
      if (!deleted) throw notFound(`variable ${quoted(name)} in run ${quoted(runId)}`);
      return { success: true };
    },
  };
}
