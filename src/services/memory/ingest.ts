// Ingest routes: asynchronous jobs, the synchronous bulk write, job status and per-run ingest statistics.
import type { ServiceImpl } from "@connectrpc/connect";
import { ConnectError } from "@connectrpc/connect";
import { screenEntries } from "../../memory/ingest-screening.js";
import type { BatchInsertItemResult, MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { invalidArgument, notFound, permissionDenied } from "../../platform/errors.js";
import type { IngestJobRecord } from "../../memory/ingest-queue.js";
import type { EntryToWrite } from "../../memory/entry-writer.js";
import { DuplicateFinder, dedupKey } from "../../memory/batch-dedupe.js";
import type { MemoryDeps } from "./deps.js";
import { batchItem, checkItemCount, ingestItem } from "./ingest-items.js";
import { bounded, required } from "./validate.js";
import { RequestSpaces } from "./vector-space-input.js";
import { VectorSpaceConflict } from "../../storage/vector-space-store.js";
import { costMessage } from "../cost-message.js";
import { iso } from "../iso-time.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "ingest" | "batchInsert" | "getIngestJob" | "getIngestStats">;

function jobView(job: IngestJobRecord) {
  return {
    jobId: job.jobId,
    runId: job.runId,
    status: job.status,
    done: job.status === "completed" || job.status === "failed",
    error: job.error,
    createdAt: iso(job.createdAt),
    startedAt: iso(job.startedAt),
    finishedAt: iso(job.finishedAt),
    traces: job.traces.map((t) => ({
      itemId: t.itemId,
      contentType: t.contentType,
      selectedTypes: [t.entryType],
      reasoning: t.reasoning,
      writes: [{ memoryType: t.entryType, recordId: t.recordId, success: true, error: "" }],
      confidence: t.confidence,
    })),
    ordered: job.ordered,
    deduplicated: job.deduplicatedCount > 0,
    itemCount: job.itemCount,
    entryCount: job.entryCount,
    agentId: job.agentId,
    jobCost: costMessage(job.cost),
  };
}

export function ingestHandlers(deps: MemoryDeps): Handlers {
  const spacesOf = (owner: number): RequestSpaces => new RequestSpaces(deps.entries.spaces, owner, deps.index.embedder.dimensions);
  const duplicates = new DuplicateFinder(deps.index.catalog, deps.entries);
  return {
    async ingest(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const agentId = bounded("agent_id", req.agentId);
      checkItemCount(req.items.length);
      const spaces = spacesOf(caller.userId);
      const origin = { trustPolicy: deps.trustPolicy, keyId: caller.keyId, now: deps.now() };
      const items = await screenEntries(req.items.map((item, i) => ingestItem(item, i, caller.userId, runId, agentId, spaces, origin)));
      const mayWrite = deps.agents.writeCheck(caller.userId, runId, agentId);
      items.forEach((item, i) => {
        const refusal = mayWrite(item.entry);
        if (refusal !== undefined) throw permissionDenied(`items[${i}].${refusal.field}: ${refusal.reason}`);
      });
      const { job, deduplicated } = await deps.ingest.accept(
        caller.userId,
        runId,
        agentId,
        bounded("idempotency_key", req.idempotencyKey),
        !req.parallel,
        items,
        caller.keyId,
      );
      return { accepted: true, jobId: job.jobId, deduplicated, status: job.status };
    },

    async batchInsert(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const agentId = bounded("agent_id", req.agentId);
      checkItemCount(req.items.length);
      const results: Omit<BatchInsertItemResult, "$typeName">[] = [];
      const valid: { at: number; item: EntryToWrite }[] = [];
      const mayWrite = deps.agents.writeCheck(caller.userId, runId, agentId);
      const spaces = spacesOf(caller.userId);
      const origin = { trustPolicy: deps.trustPolicy, keyId: caller.keyId, now: deps.now() };
      req.items.forEach((raw, i) => {
        const itemId = raw.itemId || `item-${i}`;
        try {
          const item = batchItem(raw, i, caller.userId, runId, agentId, spaces, origin);
          const refusal = mayWrite(item.entry);
          if (refusal !== undefined) throw permissionDenied(`items[${i}].${refusal.field}: ${refusal.reason}`);
          spaces.claim(item);
          valid.push({ at: i, item });
          results.push({ itemId, success: true, entryId: "", error: "", deduplicated: false });
        } catch (e: unknown) {
          if (!(e instanceof ConnectError)) throw e;
          results.push({ itemId, success: false, entryId: "", error: e.rawMessage, deduplicated: false });
        }
      });
      // Flags and the guard on untrusted knowledge, in time slices, before anything is compared or written.
      const screened = await screenEntries(valid.map((v) => v.item));
      screened.forEach((item, j) => {
        const slot = valid[j];
        if (slot !== undefined) slot.item = item;
      });
      const existing = req.deduplicate
        ? await duplicates.find(caller.userId, runId, valid.map((v) => v.item.entry))
        : new Map<string, string>();
      const toWrite = valid.filter(({ at, item }) => {
        const duplicate = existing.get(dedupKey(item.entry));
        const result = results[at];
        if (duplicate === undefined || result === undefined) return true;
        result.entryId = duplicate;
        result.deduplicated = true;
        return false;
      });
      const consolidate = req.consolidate ?? true;
      const written = await deps.writer.write(toWrite.map((w) => ({ ...w.item, consolidate })), "batch_insert").catch((e: unknown) => {
        // Another request fixed a space's dimension since the items were checked: nothing was written.
        if (e instanceof VectorSpaceConflict) throw invalidArgument("items", `${e.message}; nothing was stored`);
        throw e;
      });
      written.forEach(({ record }, j) => {
        const result = results[(toWrite[j] as { at: number }).at];
        if (result !== undefined) result.entryId = record.id;
      });
      const stored = results.filter((r) => r.success);
      return {
        success: stored.length === results.length,
        count: stored.length,
        entryIds: stored.map((r) => r.entryId),
        itemResults: results,
        message: `stored ${stored.length} of ${results.length} items`,
      };
    },

    async getIngestJob(req, ctx) {
      const caller = callerOf(ctx);
      const job = deps.ingest.get(
        required("job_id", req.jobId),
        (j) => (isAdmin(caller) || j.owner === caller.userId) && (req.runId === "" || j.runId === req.runId),
      );
      if (job === undefined) throw notFound(`ingest job "${req.jobId}"`);
      return jobView(job);
    },

    async getIngestStats(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const { catalog } = deps.index;
      const byType: Record<string, number> = {};
      let lastIngest = 0;
      const seqs = catalog.runSeqs(isAdmin(caller) ? undefined : caller.userId, runId);
      for (const seq of seqs) {
        const type = catalog.entryType(seq);
        byType[type] = (byType[type] ?? 0) + 1;
        lastIngest = Math.max(lastIngest, catalog.createdAt(seq));
      }
      const agents = new Map<string, { jobs: number; completed: number; failed: number; deduplicated: number; items: number; last: number }>();
      let totalJobs = 0;
      let completed = 0;
      let failed = 0;
      let deduplicated = 0;
      let totalItems = 0;
      for (const job of deps.ingest.jobsOfRun(caller.userId, runId)) {
        totalJobs++;
        totalItems += job.itemCount;
        deduplicated += job.deduplicatedCount;
        if (job.status === "completed") completed++;
        if (job.status === "failed") failed++;
        const agent = agents.get(job.agentId) ?? { jobs: 0, completed: 0, failed: 0, deduplicated: 0, items: 0, last: 0 };
        agent.jobs++;
        agent.items += job.itemCount;
        agent.deduplicated += job.deduplicatedCount;
        if (job.status === "completed") agent.completed++;
        if (job.status === "failed") agent.failed++;
        agent.last = Math.max(agent.last, job.createdAt);
        agents.set(job.agentId, agent);
      }
      return {
        runId,
        totalIngested: seqs.length,
        byType,
        lastIngestAt: iso(lastIngest),
        totalJobs,
        completedJobs: completed,
        failedJobs: failed,
        deduplicatedJobs: deduplicated,
        totalItems,
        agents: [...agents].map(([agentId, a]) => ({
          agentId,
          jobCount: a.jobs,
          completedJobCount: a.completed,
          failedJobCount: a.failed,
          deduplicatedJobCount: a.deduplicated,
          itemCount: a.items,
          lastJobAt: iso(a.last),
        })),
        statsAvailable: true,
        statusReason: "",
      };
    },
  };
}
