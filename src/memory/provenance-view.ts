// An entry's provenance as the routes show it (evidence, context sources, activity, exports, lessons): one mapping
// from the stored record, so every route reports the same origin, trust, writing key and agent.
import { create } from "@bufbuild/protobuf";
import { ProvenanceSchema, type Provenance as ProvenanceMessage } from "../../gen/engram/v2/memory_service_pb.js";
import type { EntryRecord } from "../storage/entry-record.js";

export function provenanceView(record: Pick<EntryRecord, "provenance" | "agentId" | "flags">): ProvenanceMessage {
  const p = record.provenance;
  return create(ProvenanceSchema, {
    origin: p.origin,
    toolName: p.toolName,
    url: p.url,
    trust: p.trust,
    keyId: p.keyId,
    agentId: record.agentId,
    flags: [...record.flags],
  });
}
