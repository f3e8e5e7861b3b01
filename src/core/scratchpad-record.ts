// A scratchpad entry as stored (decoded on every read), and its JSON form: the ScratchpadEntry message, as responses
// and events carry it.
import { create, toJsonString } from "@bufbuild/protobuf";
import { ScratchpadEntrySchema, type ScratchpadEntry } from "../../gen/engram/v2/core_service_pb.js";
import { openRecord, type RecordReader } from "../storage/record-codec.js";

/** The record version this build writes and reads. */
export const SCRATCHPAD_RECORD_VERSION = 1;

export interface ScratchpadRecord {
  readonly v: typeof SCRATCHPAD_RECORD_VERSION;
  /** Server-assigned, `sp_<base36>`; assigned when the entry is written or staged. */
  readonly id: string;
  /** The scratchpad (a caller-chosen scope), not a transactional session. */
  readonly sessionId: string;
  readonly agentId: string;
  /** "" when written without a key. */
  readonly key: string;
  readonly content: string;
  readonly entryJson: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** Unix milliseconds; strictly increasing within one scratchpad, so `after_timestamp` pages exactly. */
  readonly timestamp: number;
  /** Unix milliseconds; 0 when the entry does not expire. */
  readonly expiresAt: number;
}

/** What an entry holds as its writer gave it: shared by stored entries and writes staged in a core session. */
export function readScratchpadContent(r: RecordReader): Pick<ScratchpadRecord, "sessionId" | "agentId" | "key" | "content" | "entryJson" | "metadata"> {
  return {
    sessionId: r.string("sessionId"),
    agentId: r.string("agentId"),
    key: r.string("key"),
    content: r.string("content"),
    entryJson: r.string("entryJson"),
    metadata: r.stringMap("metadata"),
  };
}

/** `key`: the record's [owner, session_id, seq] key, for messages. */
export function decodeScratchpadEntry(key: unknown, value: unknown): ScratchpadRecord {
  const r = openRecord("core_scratchpad", key, value, SCRATCHPAD_RECORD_VERSION);
  return {
    v: SCRATCHPAD_RECORD_VERSION,
    id: r.string("id"),
    ...readScratchpadContent(r),
    timestamp: r.number("timestamp"),
    expiresAt: r.number("expiresAt"),
  };
}

export function scratchpadIdOf(seq: number): string {
  return `sp_${seq.toString(36)}`;
}

export function scratchpadEntryOf(record: ScratchpadRecord): ScratchpadEntry {
  return create(ScratchpadEntrySchema, {
    id: record.id,
    sessionId: record.sessionId,
    agentId: record.agentId,
    key: record.key,
    content: record.content,
    entryJson: record.entryJson,
    metadata: { ...record.metadata },
    timestamp: BigInt(record.timestamp),
    expiresAt: BigInt(record.expiresAt),
  });
}

/** The entry as the API's JSON (proto field names, every field present), for `memory.added` events. */
export function scratchpadEntryJson(record: ScratchpadRecord): string {
  return toJsonString(ScratchpadEntrySchema, scratchpadEntryOf(record), { useProtoFieldName: true, alwaysEmitImplicit: true });
}

export function isLive(record: ScratchpadRecord, now: number): boolean {
  return record.expiresAt === 0 || record.expiresAt > now;
}
