// Exact artifacts: archive blocks and checkpoints are stored verbatim with a stable reference id that
// Dereference returns byte for byte.
import { createHash } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { IMPORTANCE_LEVELS, newEntry, seqOfEntryId, type EntryType } from "../../storage/entry-store.js";
import { writeProvenance } from "../../storage/provenance.js";
import { invalidArgument, permissionDenied } from "../../platform/errors.js";
import { countTokens } from "../../retrieval/context/token-counter.js";
import type { MemoryDeps } from "./deps.js";
import { evidenceOfEntry } from "./evidence.js";
import { bounded, content, jsonObject, oneOf, required } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "archiveBlock" | "dereference" | "checkpoint">;

function withKeys(metadataJson: string, extra: Record<string, unknown>): string {
  const metadata = JSON.parse(metadataJson) as Record<string, unknown>;
  for (const [key, value] of Object.entries(extra)) if (value !== "" && !(Array.isArray(value) && value.length === 0)) metadata[key] = value;
  return JSON.stringify(metadata);
}

export function archiveHandlers(deps: MemoryDeps): Handlers {
  return {
    async archiveBlock(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      mayWrite(deps, caller.userId, runId, req.agentId, "archive_block");
      const text = content("content", req.content);
      const family = bounded("family", req.family);
      const sourceTool = bounded("source_tool", req.sourceTool);
      const entry = newEntry({
        owner: caller.userId,
        runId,
        agentId: bounded("agent_id", req.agentId),
        userId: bounded("user_id", req.userId),
        entryType: "archive_block",
        content: text,
        importance: oneOf("importance", req.importance, IMPORTANCE_LEVELS, "medium"),
        metadataJson: withKeys(jsonObject("metadata_json", req.metadataJson), {
          artifact_kind: bounded("artifact_kind", req.artifactKind) || "text",
          origin_agent_id: bounded("origin_agent_id", req.originAgentId) || req.agentId,
          source_attempt_id: bounded("source_attempt_id", req.sourceAttemptId),
          source_tool: sourceTool,
          labels: req.labels.map((l, i) => bounded(`labels[${i}]`, l)),
          family,
        }),
        occurrenceTime: Math.floor(Date.now() / 1000),
        // A newer block of the same family supersedes the older one.
        upsertKey: family === "" ? "" : `archive:${family}`,
        // A block naming its source tool holds that tool's output: origin `tool`, trusted only if the policy says so.
        provenance: sourceTool === "" ? writeProvenance("agent", caller.keyId, deps.trustPolicy) : writeProvenance("tool", caller.keyId, deps.trustPolicy, sourceTool),
      });
      const [written] = await deps.writer.write([{ entry }], "archive");
      if (written === undefined) throw new Error("write returned no entry");
      return {
        success: true,
        referenceId: written.record.referenceId,
        entryType: "archive_block",
        contentSha256: createHash("sha256").update(text, "utf8").digest("hex"),
      };
    },

    async dereference(req, ctx) {
      const caller = callerOf(ctx);
      const entry = deps.entries.find(
        required("reference_id", req.referenceId),
        (record) =>
          deps.acl.allows(caller, record.owner, record.runId, record.lane, "read") &&
          (req.runId === "" || record.runId === req.runId) &&
          (req.userId === "" || record.userId === req.userId),
      );
      if (entry === undefined) return { found: false, content: "" };
      return { found: true, evidence: evidenceOfEntry(entry, 1, "exact_reference", deps.entries.viewOf(entry)), content: entry.content };
    },

    async checkpoint(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      mayWrite(deps, caller.userId, runId, req.agentId, "checkpoint");
      const snapshot = content("context_snapshot", req.contextSnapshot);
      const entry = newEntry({
        owner: caller.userId,
        runId,
        agentId: bounded("agent_id", req.agentId),
        userId: bounded("user_id", req.userId),
        entryType: "checkpoint",
        content: snapshot,
        importance: "high",
        metadataJson: withKeys(jsonObject("metadata_json", req.metadataJson), { label: bounded("label", req.label) }),
        occurrenceTime: Math.floor(Date.now() / 1000),
        sourceIds: sourceEntryIds(deps, caller.userId, req.sourceEntryIds),
        provenance: writeProvenance("agent", caller.keyId, deps.trustPolicy),
      });
      const [written] = await deps.writer.write([{ entry }], "checkpoint");
      if (written === undefined) throw new Error("write returned no entry");
      const tokens = countTokens(snapshot);
      return {
        success: true,
        checkpointId: written.record.referenceId,
        tokenEstimate: tokens,
        createdAt: new Date(written.record.createdAt).toISOString(),
      };
    },
  };
}

const MAX_SOURCE_IDS = 1000;

/**
 * Lineage ids a caller names: each must be one of its own entries. An id merged into another entry by consolidation
 * names the kept entry, whose id is stored.
 */
function sourceEntryIds(deps: MemoryDeps, owner: number, ids: readonly string[]): string[] {
  if (ids.length > MAX_SOURCE_IDS) throw invalidArgument("source_entry_ids", `must hold at most ${MAX_SOURCE_IDS} ids, got ${ids.length}`);
  return [
    ...new Set(
      ids.map((id, i) => {
        // Entry ids only: `find` also takes reference ids (`arc_…`, `chk_…`), which lineage does not.
        const source = seqOfEntryId(id) === undefined ? undefined : deps.entries.find(bounded(`source_entry_ids[${i}]`, id), (record) => record.owner === owner);
        if (source === undefined) throw invalidArgument(`source_entry_ids[${i}]`, "names no entry of the caller");
        return source.id;
      }),
    ),
  ];
}

/** A registered agent may write only the entry types of its `write_scopes`; PERMISSION_DENIED otherwise. */
export function mayWrite(deps: Pick<MemoryDeps, "agents">, owner: number, runId: string, agentId: string, entryType: EntryType): void {
  const refusal = deps.agents.writeCheck(owner, runId, bounded("agent_id", agentId))({ lane: "", entryType });
  if (refusal !== undefined) throw permissionDenied(`${refusal.field === "lane" ? "lane" : "agent_id"}: ${refusal.reason}`);
}
