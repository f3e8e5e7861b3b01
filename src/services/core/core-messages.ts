// Core records as API messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CoreNodeSchema, CoreSearchResultSchema } from "../../../gen/engram/v2/core_service_pb.js";
import { isoTime, type NodeRecord, type NodeState } from "../../core/node-record.js";
import type { NodeHit } from "../../core/node-search.js";

export function coreNodeOf({ record, vector }: NodeState): MessageInitShape<typeof CoreNodeSchema> {
  return {
    nodeId: BigInt(record.id),
    runId: record.runId,
    metadataJson: record.metadataJson,
    createdAt: isoTime(record.createdAt),
    updatedAt: isoTime(record.updatedAt),
    text: record.text,
    vector: Array.from(vector),
  };
}

export function searchResultOf(hit: NodeHit): MessageInitShape<typeof CoreSearchResultSchema> {
  const record: NodeRecord = hit.record;
  return { nodeId: BigInt(record.id), similarity: hit.similarity, runId: record.runId, metadataJson: record.metadataJson, text: record.text };
}
