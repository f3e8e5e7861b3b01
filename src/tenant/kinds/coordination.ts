// Agents registered in runs and handoffs between them (with their feedback) in an export. Agents keep their ids
// and times; handoffs and feedback get fresh ids of the importing server.
import { Code } from "@connectrpc/connect";
import type { Key } from "lmdb";
import { decodeAgent, type AgentRecord } from "../../coordination/agent-record.js";
import { MAX_AGENTS_PER_RUN } from "../../coordination/agent-registry.js";
import { decodeHandoff, handoffIdOf, type HandoffRecord } from "../../coordination/handoff-record.js";
import { nextSequence, type Storage } from "../../storage/database.js";
import { runRange } from "../../storage/key-range.js";
import { recordFault } from "../import-faults.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { created, keyId, ownerPage, withoutOwner, type Scanned, type TenantKind } from "../tenant-kind.js";
import { runDeleting } from "./outcomes.js";

export function agentKind(storage: Storage): TenantKind<AgentRecord> {
  return {
    kind: "agent",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.agents, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeAgent(key, value);
        return { key: suffix, line: { id: keyId([record.runId, record.agentId]), record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeAgent(0, { ...raw, owner });
      checkId("runId", record.runId);
      checkId("agentId", record.agentId);
      checkJsonObject("metadataJson", record.metadataJson);
      return record;
    },

    write(ctx, record) {
      const { agents } = storage.dbs;
      const key: Key = [ctx.owner, record.runId, record.agentId];
      if (agents.get(key) !== undefined) throw recordFault("agentId", `agent ${JSON.stringify(record.agentId)} is already registered in this run`, Code.AlreadyExists);
      if (agents.getKeysCount(runRange(ctx.owner, record.runId)) >= MAX_AGENTS_PER_RUN) {
        throw recordFault("runId", `the run already holds ${MAX_AGENTS_PER_RUN} agents, the most a run may hold`, Code.ResourceExhausted);
      }
      agents.put(key, { ...record, owner: ctx.owner });
      return created(keyId([record.runId, record.agentId]));
    },
  };
}

export function handoffKind(storage: Storage): TenantKind<HandoffRecord> {
  return {
    kind: "handoff",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.handoffs, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeHandoff(key, value);
        return runDeleting(storage, owner, record.runId) ? { key: suffix } : { key: suffix, line: { id: record.id, record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeHandoff(0, { ...raw, owner });
      checkId("runId", record.runId);
      checkJsonObject("metadataJson", record.metadataJson);
      record.feedback.forEach((f, i) => checkJsonObject(`feedback[${i}].metadataJson`, f.metadataJson));
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const seq = nextSequence(dbs.meta, "handoff");
      const handoff: HandoffRecord = {
        ...record,
        owner: ctx.owner,
        seq,
        id: handoffIdOf(seq),
        // The caller's own list: ids of imported entries are rewritten, anything else kept as it was.
        entryIds: record.entryIds.map((id) => ctx.ref("entry", id) ?? id),
        feedback: record.feedback.map((f) => ({ ...f, id: `fbk_${nextSequence(dbs.meta, "feedback").toString(36)}` })),
      };
      dbs.handoffs.put([ctx.owner, record.runId, seq], handoff);
      return created(handoff.id);
    },
  };
}
