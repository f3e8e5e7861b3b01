// Core nodes (with their vectors) and scratchpad entries in an export. Nodes get fresh ids through the core data
// plane's write path, so the node index and subscribers follow the commit; scratchpad entries get fresh ids and keep
// their times. Expired scratchpad entries are not exported.
import type { Embedder } from "../../retrieval/embedder.js";
import { decodeNode, unitCopy, type NodeRecord } from "../../core/node-record.js";
import { decodeScratchpadEntry, isLive, scratchpadIdOf, type ScratchpadRecord } from "../../core/scratchpad-record.js";
import { nextSequence, type Storage } from "../../storage/database.js";
import { vectorFromBytes } from "../../storage/entry-store.js";
import { decodeOptional } from "../../storage/record-codec.js";
import { vectorFromBase64, vectorToBase64 } from "../line-format.js";
import { recordFault } from "../import-faults.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { created, ownerPage, withoutOwner, type Scanned, type TenantKind } from "../tenant-kind.js";

interface NodeLine {
  readonly record: NodeRecord;
  vector: Float32Array;
  /** The exported vector is of another model and the node has text: embedded again before the transaction. */
  readonly reembed: boolean;
}

export function coreNodeKind(storage: Storage, embedder: Embedder): TenantKind<NodeLine> {
  return {
    kind: "core_node",

    scan(owner, after, limit): Scanned[] {
      const { dbs } = storage;
      return ownerPage(dbs.nodesByOwnerRun, owner, after, limit).map(({ suffix }) => {
        const id = suffix[1] as number;
        const record = decodeOptional(dbs.nodes.get(id), (value) => decodeNode(id, value));
        const bytes = dbs.nodeVectors.get(id);
        if (record === undefined || bytes === undefined) return { key: suffix };
        return { key: suffix, line: { id: String(id), record: { ...withoutOwner(record), vectorModel: embedder.id, vector: vectorToBase64(vectorFromBytes(bytes)) } } };
      });
    },

    parse(owner, raw) {
      const record = decodeNode(0, { ...raw, owner });
      checkId("runId", record.runId);
      checkJsonObject("metadataJson", record.metadataJson);
      if (record.version < 1) throw recordFault("version", "must be a positive integer");
      const vector = vectorFromBase64("record.vector", raw["vector"]);
      // As when the server's embedder changes: a node with text is embedded again, a vector given alone is the caller's.
      const reembed = record.text !== "" && (raw["vectorModel"] !== embedder.id || vector.length !== embedder.dimensions);
      return { record, vector, reembed };
    },

    async prepare(items) {
      const stale = items.filter((item) => item.reembed);
      if (stale.length === 0) return;
      const vectors = await embedder.embed(stale.map((item) => item.record.text));
      stale.forEach((item, i) => (item.vector = unitCopy(vectors[i] as Float32Array)));
    },

    write(ctx, { record, vector }) {
      const { v: _v, id: _id, ...node } = record;
      const stored = ctx.importNode({ ...node, owner: ctx.owner }, vector);
      return created(String(stored.id));
    },
  };
}

export function scratchpadKind(storage: Storage): TenantKind<ScratchpadRecord> {
  return {
    kind: "scratchpad",

    scan(owner, after, limit): Scanned[] {
      const now = Date.now();
      return ownerPage(storage.dbs.scratchpad, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeScratchpadEntry(key, value);
        return isLive(record, now) ? { key: suffix, line: { id: record.id, record: { ...record } } } : { key: suffix };
      });
    },

    parse(_owner, raw) {
      const record = decodeScratchpadEntry(0, raw);
      checkId("sessionId", record.sessionId);
      return record;
    },

    write(ctx, record) {
      const { dbs } = storage;
      const seq = nextSequence(dbs.meta, "scratchpad");
      const id = scratchpadIdOf(seq);
      dbs.scratchpad.put([ctx.owner, record.sessionId, seq], { ...record, id });
      return created(id);
    },
  };
}
