// RunsService: listing the caller's runs, linking and unlinking them, the context snapshot of a run and run deletion.
import type { ServiceImpl } from "@connectrpc/connect";
import type { RunsService } from "../../../gen/engram/v2/runs_service_pb.js";
import type { Goal, Variable } from "../../../gen/engram/v2/planning_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { notFound } from "../../platform/errors.js";
import type { EntryRecord } from "../../storage/entry-store.js";
import type { MemoryDeps } from "../memory/deps.js";
import { evidenceOfEntry } from "../memory/evidence.js";
import { required } from "../memory/validate.js";
import { modeOf } from "../../retrieval/search-engine.js";
import type { RunDeletion } from "../../memory/run-deletion.js";
import type { RunDirectory } from "../../runs/run-directory.js";
import type { RunLinks } from "../../runs/run-links.js";
import { listRuns, linkedPair } from "./run-listing.js";
import { retentionHandlers, type RetentionDeps } from "./retention.js";

const ATTENTION_LIMIT = 10;
const WORKING_MEMORY_LIMIT = 50;

type Reason = "latest_checkpoint" | "active_rule" | "important_lesson" | "recent";

export interface RunsDeps extends RetentionDeps {
  readonly memory: MemoryDeps;
  readonly deletion: RunDeletion;
  readonly directory: RunDirectory;
  readonly links: RunLinks;
  /** Phase of the owner's control session of a run, if it has one. */
  readonly sessionPhase: (owner: number, runId: string) => string | undefined;
  /** The run's open goals and its variables (the planning routes), for the context snapshot. */
  readonly planOf: (owner: number, runId: string) => { goals: Goal[]; variables: Variable[] };
}

export function runsService({ memory: deps, deletion, directory, links, sessionPhase, planOf, retention, projectExists }: RunsDeps): Partial<ServiceImpl<typeof RunsService>> {
  return {
    ...retentionHandlers({ retention, projectExists }),

    listRuns(req, ctx) {
      return listRuns({ directory, links, sessionPhase, retentionOf: (owner, runId) => retention.get(owner, "run", runId) }, callerOf(ctx).userId, req);
    },

    async linkRun(req, ctx) {
      const { runId, linkedRunId } = linkedPair(req);
      const { scope } = await links.link(callerOf(ctx).userId, runId, linkedRunId);
      return { linked: true, scope: { runId: scope.runId, linkedRunIds: [...scope.linkedRunIds] } };
    },

    async unlinkRun(req, ctx) {
      const { runId, linkedRunId } = linkedPair(req);
      const { removed, scope } = await links.unlink(callerOf(ctx).userId, runId, linkedRunId);
      return { unlinked: removed, scope: { runId: scope.runId, linkedRunIds: [...scope.linkedRunIds] } };
    },

    async deleteRun(req, ctx) {
      const caller = callerOf(ctx);
      const result = await deletion.deleteRun(caller.userId, required("run_id", req.runId));
      return { deleted: result.deleted, erased: result.erased };
    },

    getContextSnapshot(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const { catalog } = deps.index;
      const seqs = catalog.runSeqs(isAdmin(caller) ? undefined : caller.userId, runId);
      const plan = planOf(caller.userId, runId);
      if (seqs.length === 0 && plan.goals.length === 0 && plan.variables.length === 0) throw notFound(`run "${runId}"`);
      // Newest first, current entries only.
      const current: EntryRecord[] = [];
      for (let i = seqs.length - 1; i >= 0; i--) {
        const seq = seqs[i] as number;
        if (catalog.isStale(seq)) continue;
        const entry = deps.entries.get(seq);
        if (entry !== undefined) current.push(entry);
      }
      const attention: { reason: Reason; entry: EntryRecord; weight: number }[] = [];
      const listed = new Set<number>();
      const take = (entries: EntryRecord[], reason: Reason, max: number, weight: number): void => {
        for (const entry of entries.slice(0, max)) {
          if (attention.length >= ATTENTION_LIMIT || listed.has(entry.seq)) continue;
          attention.push({ reason, entry, weight });
          listed.add(entry.seq);
        }
      };
      take(current.filter((e) => e.entryType === "checkpoint"), "latest_checkpoint", 1, 1);
      take(current.filter((e) => e.entryType === "rule"), "active_rule", 3, 0.9);
      take(current.filter((e) => e.entryType === "lesson" && (e.importance === "high" || e.importance === "critical")), "important_lesson", 3, 0.8);
      take(current, "recent", ATTENTION_LIMIT, 0.5);
      const workingMemory = current.filter((e) => e.entryType === "working_memory").slice(0, WORKING_MEMORY_LIMIT);
      return {
        snapshot: {
          runId,
          workingMemory:
            req.includeWorkingMemory === false
              ? { variables: [], entries: [] }
              : { variables: plan.variables, entries: workingMemory.map((e) => evidenceOfEntry(e, 1, "working_memory", deps.entries.viewOf(e))) },
          attention: attention.map((a) => ({ reason: a.reason, entry: evidenceOfEntry(a.entry, a.weight, modeOf(a.entry), deps.entries.viewOf(a.entry)) })),
          goals: plan.goals,
          lastActivityAt: seqs.length === 0 ? "" : new Date(catalog.createdAt(seqs[seqs.length - 1] as number)).toISOString(),
          generatedAt: new Date().toISOString(),
        },
      };
    },
  };
}
