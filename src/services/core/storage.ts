// Storage routes: server-wide statistics and compaction, both for admins only.
import { callerOf, isAdmin } from "../../auth/principal.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { VectorIndex } from "../../retrieval/vector-index.js";
import { internal, permissionDenied } from "../../platform/errors.js";
import type { Compactor } from "../../storage/compaction.js";
import type { Storage } from "../../storage/database.js";
import { storageStats, type IndexStats } from "../../storage/storage-stats.js";
import type { CoreHandlers } from "./core-service.js";

export interface StorageRouteDeps {
  readonly storage: Storage;
  readonly compactor: Compactor;
  readonly index: MemoryIndex;
  /** Rows for other derived indexes (e.g. the core nodes' vectors), after the memory engine's. */
  readonly moreIndexes?: () => readonly IndexStats[];
}

/** One row for a vector index: vectors in its graph, approximate bytes in memory. */
export function vectorIndexStats(name: string, index: VectorIndex): IndexStats {
  return { name, entryCount: index.size, sizeBytes: index.memoryBytes };
}

/** The memory engine's derived indexes: the vector graph, the entry catalog and the BM25 postings. */
export function memoryIndexStats(index: MemoryIndex): IndexStats[] {
  return [
    vectorIndexStats("vector", index.dense),
    { name: "catalog", entryCount: index.catalog.count, sizeBytes: index.catalog.memoryBytes },
    { name: "sparse", entryCount: index.sparse.postingCount, sizeBytes: index.sparse.memoryBytes },
  ];
}

export function storageHandlers(deps: StorageRouteDeps): CoreHandlers {
  return {
    getStorageStats(_req, ctx) {
      // Key counts and the file size move with every owner's writes: shown to a user, they would tell it how much the
      // others store and when they write. Per-owner figures would need a scan of every database per call.
      if (!isAdmin(callerOf(ctx))) throw permissionDenied("GetStorageStats needs an admin key: storage statistics are server-wide");
      const stats = storageStats({
        storage: deps.storage,
        compactor: deps.compactor,
        indexes: () => [...memoryIndexStats(deps.index), ...(deps.moreIndexes?.() ?? [])],
        vectorDimension: deps.index.embedder.dimensions,
      });
      return {
        diskSizeBytes: BigInt(stats.diskSizeBytes),
        databases: stats.databases.map((d) => ({ name: d.name, keyCount: BigInt(d.keyCount) })),
        indexes: stats.indexes.map((i) => ({ name: i.name, entryCount: BigInt(i.entryCount), sizeBytes: BigInt(i.sizeBytes) })),
        vectorDimension: stats.vectorDimension,
        lastCompactionAt: stats.lastCompactionAt,
        compactionRunning: stats.compactionRunning,
      };
    },

    async triggerCompaction(req, ctx) {
      if (!isAdmin(callerOf(ctx))) throw permissionDenied("TriggerCompaction needs an admin key");
      const start = deps.compactor.start();
      const diskSizeBeforeBytes = BigInt(start.sizeBeforeBytes);
      if (!start.started) return { started: false, message: "a compaction is already running", diskSizeBeforeBytes };
      if (!req.wait) return { started: true, message: "compaction started", diskSizeBeforeBytes };
      let result;
      try {
        result = await start.done;
      } catch (e: unknown) {
        throw internal(e);
      }
      return {
        started: true,
        message: `compacted from ${result.sizeBeforeBytes} to ${result.sizeAfterBytes} bytes`,
        diskSizeBeforeBytes: BigInt(result.sizeBeforeBytes),
        diskSizeAfterBytes: BigInt(result.sizeAfterBytes),
        finishedAt: result.finishedAt,
      };
    },
  };
}
