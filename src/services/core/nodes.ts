// Node routes: insert or update one node or a batch, get, delete one node, delete a run's nodes.
import { callerOf } from "../../auth/principal.js";
import type { CoreData } from "../../core/core-data.js";
import { bounded, required } from "../memory/validate.js";
import { coreNodeOf } from "./core-messages.js";
import type { CoreHandlers } from "./core-service.js";
import { nodeIdParam, nodeWrites } from "./node-input.js";

export function nodeHandlers(core: CoreData): CoreHandlers {
  return {
    async insertNode(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = bounded("session_id", req.sessionId);
      const writes = await nodeWrites([req], false, core.embedder);
      const [state] = await core.writer.upsert(caller, writes, sessionId);
      if (state === undefined) throw new Error("upsert returned no node");
      const verb = req.nodeId === 0n ? "inserted" : "updated";
      return {
        success: true,
        nodeId: BigInt(state.record.id),
        message: sessionId === "" ? `node ${state.record.id} ${verb}` : `node ${state.record.id} ${verb} in session "${sessionId}" (applied at commit)`,
        node: coreNodeOf(state),
      };
    },

    async batchInsertNodes(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = bounded("session_id", req.sessionId);
      const writes = await nodeWrites(req.nodes, true, core.embedder);
      const states = writes.length === 0 ? [] : await core.writer.upsert(caller, writes, sessionId);
      return { count: states.length, nodeIds: states.map((s) => BigInt(s.record.id)) };
    },

    getNode(req, ctx) {
      const caller = callerOf(ctx);
      const id = nodeIdParam("id", req.id);
      const sessionId = bounded("session_id", req.sessionId);
      return { node: coreNodeOf(core.getNode(caller, id, sessionId)) };
    },

    async deleteNode(req, ctx) {
      const caller = callerOf(ctx);
      const id = nodeIdParam("id", req.id);
      const sessionId = bounded("session_id", req.sessionId);
      await core.writer.delete(caller, id, sessionId);
      return { success: true, message: sessionId === "" ? `node ${id} deleted` : `delete of node ${id} staged in session "${sessionId}"` };
    },

    async deleteRunNodes(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const count = await core.writer.deleteRun(caller, runId);
      return { success: true, message: `deleted ${count} node${count === 1 ? "" : "s"} of run "${runId}"`, count };
    },
  };
}
