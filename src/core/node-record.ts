// A core node as stored: its record (msgpack, schema version 1, decoded on every read) and its vector kept apart as
// Float32 bytes.
import { openRecord, type RecordReader } from "../storage/record-codec.js";

/** The record version this build writes and reads. */
export const NODE_RECORD_VERSION = 1;

export interface NodeRecord {
  readonly v: typeof NODE_RECORD_VERSION;
  /** Server-assigned id from the `node` sequence; never reused. Exposed as a uint64. */
  readonly id: number;
  /** Auth user id of the key that created the node; updates by grantees keep it. */
  readonly owner: number;
  readonly runId: string;
  readonly text: string;
  /** A JSON object text. */
  readonly metadataJson: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly updatedAt: number;
  /** 1 when created, +1 on every applied update: what sessions compare to detect conflicting commits. */
  readonly version: number;
}

export function decodeNode(id: unknown, value: unknown): NodeRecord {
  return readNode(openRecord("core_nodes", id, value, NODE_RECORD_VERSION));
}

/** A node record's fields, from a reader opened at version NODE_RECORD_VERSION (also nested in staged writes). */
export function readNode(r: RecordReader): NodeRecord {
  return {
    v: NODE_RECORD_VERSION,
    id: r.integer("id"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    text: r.string("text"),
    metadataJson: r.string("metadataJson"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
    version: r.integer("version"),
  };
}

/** A node with its vector, as a read or a staged write sees it. */
export interface NodeState {
  readonly record: NodeRecord;
  readonly vector: Float32Array;
}

/** The node id of a uint64 from the API, or undefined when it cannot name a node (beyond 2^53). */
export function nodeIdOf(id: bigint): number | undefined {
  return id > 0n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : undefined;
}

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A unit-length copy (cosine similarity is then a dot product); the zero vector stays zero. */
export function unitCopy(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const x of vector) norm += x * x;
  const copy = Float32Array.from(vector);
  if (norm > 0 && Math.abs(norm - 1) > 1e-6) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < copy.length; i++) copy[i] = (copy[i] as number) * scale;
  }
  return copy;
}
