// Run links and control sessions in an export. A control session's window of entries is written as entry seqs of the
// server that exported it, so it travels as the first and last entry of the window instead and is rebuilt from the
// ids those entries received on import.
import { Code } from "@connectrpc/connect";
import type { Key } from "lmdb";
import { decodeControlSession, type ControlSessionRecord } from "../../control-sessions/control-session-record.js";
import type { ControlSessionStore } from "../../control-sessions/control-session-store.js";
import { decodeRunLink, type RunLinkRecord } from "../../runs/run-link-record.js";
import { MAX_LINKED_RUNS } from "../../runs/run-links.js";
import type { Storage } from "../../storage/database.js";
import { entryIdOf, seqOfEntryId, type EntryStore } from "../../storage/entry-store.js";
import { runRange } from "../../storage/key-range.js";
import { openFields } from "../../storage/record-codec.js";
import { recordFault } from "../import-faults.js";
import { checkId } from "../record-checks.js";
import { alreadyStored, created, keyId, ownerPage, withoutOwner, type ImportContext, type Scanned, type TenantKind } from "../tenant-kind.js";

export function runLinkKind(storage: Storage): TenantKind<RunLinkRecord> {
  return {
    kind: "run_link",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.runLinks, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeRunLink(key, value);
        return { key: suffix, line: { id: keyId([record.runId, record.linkedRunId]), record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeRunLink(0, { ...raw, owner });
      checkId("runId", record.runId);
      checkId("linkedRunId", record.linkedRunId);
      if (record.runId === record.linkedRunId) throw recordFault("linkedRunId", "must differ from runId");
      return record;
    },

    write(ctx, record) {
      const { runLinks, runLinkedBy } = storage.dbs;
      const id = keyId([record.runId, record.linkedRunId]);
      const key: Key = [ctx.owner, record.runId, record.linkedRunId];
      // A link is there or not: the same link made by the owner already is the same record.
      if (runLinks.get(key) !== undefined) return alreadyStored(id);
      if (runLinks.getKeysCount(runRange(ctx.owner, record.runId)) >= MAX_LINKED_RUNS) {
        throw recordFault("runId", `the run already has ${MAX_LINKED_RUNS} linked runs, the most a run may have`, Code.ResourceExhausted);
      }
      const stored: RunLinkRecord = { ...record, owner: ctx.owner };
      runLinks.put(key, stored);
      runLinkedBy.put([ctx.owner, record.linkedRunId, record.runId], stored);
      return created(id);
    },
  };
}

interface SessionLine {
  readonly record: ControlSessionRecord;
  /** First entry of the run inside the window; "" when none (yet). */
  readonly firstEntryId: string;
  /** Closed sessions: last entry of the run inside the window; "" when none. */
  readonly lastEntryId: string;
}

export function controlSessionKind(storage: Storage, entries: EntryStore, sessions: ControlSessionStore): TenantKind<SessionLine> {
  return {
    kind: "control_session",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.controlSessions, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeControlSession(key, value);
        const window = windowOf(entries, record);
        return { key: suffix, line: { id: keyId([record.runId]), record: { ...withoutOwner(record), ...window } } };
      });
    },

    parse(owner, raw) {
      const record = decodeControlSession(0, { ...raw, owner });
      checkId("runId", record.runId);
      const r = openFields("control_sessions", 0, raw);
      return { record, firstEntryId: r.string("firstEntryId"), lastEntryId: r.string("lastEntryId") };
    },

    write(ctx, { record, firstEntryId, lastEntryId }) {
      if (sessions.get(ctx.owner, record.runId) !== undefined) {
        throw recordFault("runId", `run ${JSON.stringify(record.runId)} already has a control session in this memory`, Code.AlreadyExists);
      }
      const first = seqOf(ctx, firstEntryId, "firstEntryId");
      // Entries of the window arrived in write order: the window starts just before the first of them, or (none yet)
      // at the newest entry now, so that the entries written from now on count.
      const startSeq = first === undefined ? entries.maxSeq() : first - 1;
      const last = record.phase === "closed" ? seqOf(ctx, lastEntryId, "lastEntryId") : undefined;
      const endSeq = record.phase === "closed" ? Math.max(startSeq, last ?? startSeq) : 0;
      const finalCheckpointId = record.finalCheckpointId === "" ? "" : (ctx.ref("reference", record.finalCheckpointId) ?? "");
      // A project id of this export is rewritten; any other value the session was given is kept.
      const projectId = record.projectId === "" ? "" : (ctx.ref("project", record.projectId) ?? record.projectId);
      sessions.putInTransaction({ ...record, owner: ctx.owner, projectId, startSeq, endSeq, finalCheckpointId });
      return created(keyId([record.runId]));
    },
  };
}

/** The run's entries bounding the session's window (seq in (startSeq, endSeq], endSeq open while active). */
function windowOf(entries: EntryStore, record: ControlSessionRecord): { firstEntryId: string; lastEntryId: string } {
  const { owner, runId, startSeq, endSeq } = record;
  let first: number | undefined;
  for (const seq of entries.visibleSeqs(owner, runId, false, startSeq)) {
    first = seq;
    break;
  }
  let last: number | undefined;
  if (record.phase === "closed") {
    for (const seq of entries.visibleSeqs(owner, runId, true, endSeq + 1)) {
      if (seq > startSeq) last = seq;
      break;
    }
  }
  return { firstEntryId: first === undefined ? "" : entryIdOf(first), lastEntryId: last === undefined ? "" : entryIdOf(last) };
}

/** The seq the imported entry `id` received; undefined for "" or an entry this import did not write. */
function seqOf(ctx: ImportContext, id: string, field: string): number | undefined {
  if (id === "") return undefined;
  const target = ctx.ref("entry", id);
  if (target === undefined) throw recordFault(field, `names entry ${JSON.stringify(id.slice(0, 64))}, which this import has not seen; import the lines of an export in their order`);
  return seqOfEntryId(target);
}
