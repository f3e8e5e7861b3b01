// Validation of node writes at the service boundary: every problem is INVALID_ARGUMENT naming its field (with
// `nodes[i].` in batches); text is embedded server-side only once the whole request is valid.
import type { Embedder } from "../../retrieval/embedder.js";
import { invalidArgument, notFound } from "../../platform/errors.js";
import { nodeIdOf } from "../../core/node-record.js";
import type { NodeWrite } from "../../core/node-writes.js";
import { bounded, callerVector, content, jsonObject, required } from "../memory/validate.js";

export const MAX_BATCH_NODES = 1000;

interface RawNode {
  readonly nodeId: bigint;
  readonly runId: string;
  readonly text: string;
  readonly vector: readonly number[];
  readonly metadataJson: string;
}

interface CheckedNode extends Omit<NodeWrite, "vector"> {
  readonly vector: Float32Array | undefined;
}

function check(raw: RawNode, field: string, dimensions: number): CheckedNode {
  const nodeId = raw.nodeId === 0n ? undefined : nodeIdOf(raw.nodeId);
  // An id beyond 2^53 was never assigned: it names no node.
  if (raw.nodeId !== 0n && nodeId === undefined) throw notFound(`node ${raw.nodeId} (${field}node_id)`);
  const runId = nodeId === undefined ? required(`${field}run_id`, raw.runId) : bounded(`${field}run_id`, raw.runId);
  const text = content(`${field}text`, raw.text, true);
  const vector = callerVector(`${field}vector`, raw.vector, dimensions);
  if (vector === undefined && text.trim() === "") throw invalidArgument(`${field}text`, "at least one of text and vector is required");
  return { nodeId, runId, text, vector, metadataJson: jsonObject(`${field}metadata_json`, raw.metadataJson), field };
}

/** Validates every node first, then embeds the texts of those without a vector in one call. */
export async function nodeWrites(raws: readonly RawNode[], batch: boolean, embedder: Embedder): Promise<NodeWrite[]> {
  if (batch && raws.length > MAX_BATCH_NODES) {
    throw invalidArgument("nodes", `at most ${MAX_BATCH_NODES} nodes per request, got ${raws.length}`);
  }
  const checked = raws.map((raw, i) => check(raw, batch ? `nodes[${i}].` : "", embedder.dimensions));
  const missing = checked.flatMap((c, i) => (c.vector === undefined ? [i] : []));
  const embedded = missing.length === 0 ? [] : await embedder.embed(missing.map((i) => (checked[i] as CheckedNode).text));
  const vectors = checked.map((c) => c.vector);
  missing.forEach((at, j) => (vectors[at] = embedded[j]));
  return checked.map((c, i) => ({ ...c, vector: vectors[i] as Float32Array }));
}

/** A node id from a path or body: 0 is INVALID_ARGUMENT; ids beyond 2^53 name no node. */
export function nodeIdParam(field: string, id: bigint): number {
  if (id === 0n) throw invalidArgument(field, "is required (a node id)");
  const nodeId = nodeIdOf(id);
  if (nodeId === undefined) throw notFound(`node ${id}`);
  return nodeId;
}
