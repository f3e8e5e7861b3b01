// Server-wide storage statistics: data file size, keys per named database, derived index sizes, compaction state.
// Counts only, never record content.
import type { Compactor } from "./compaction.js";
import { DATABASE_NAMES, type Databases, type Storage } from "./database.js";

export interface DatabaseStats {
  /** LMDB name of the database. */
  readonly name: string;
  readonly keyCount: number;
}

export interface IndexStats {
  readonly name: string;
  /** Vectors, postings, entries... as the index counts them. */
  readonly entryCount: number;
  readonly sizeBytes: number;
}

export interface StorageStats {
  /** Size of the LMDB data file. */
  readonly diskSizeBytes: number;
  readonly databases: readonly DatabaseStats[];
  readonly indexes: readonly IndexStats[];
  readonly vectorDimension: number;
  /** RFC 3339, "" when no compaction has run. */
  readonly lastCompactionAt: string;
  readonly compactionRunning: boolean;
}

export interface StatsSources {
  readonly storage: Storage;
  readonly compactor: Compactor;
  /** The derived in-memory indexes, reported by whoever owns them. */
  readonly indexes: () => readonly IndexStats[];
  readonly vectorDimension: number;
}

export function storageStats(sources: StatsSources): StorageStats {
  const { dbs } = sources.storage;
  // Read synchronously in one event turn, so every count comes from the same environment and snapshot.
  const databases = (Object.keys(DATABASE_NAMES) as (keyof Databases)[])
    .map((field) => ({ name: DATABASE_NAMES[field], keyCount: dbs[field].getCount() }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    diskSizeBytes: sources.storage.dataFileBytes(),
    databases,
    indexes: sources.indexes(),
    vectorDimension: sources.vectorDimension,
    lastCompactionAt: sources.compactor.lastCompactionAt(),
    compactionRunning: sources.compactor.running,
  };
}
