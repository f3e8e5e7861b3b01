// The provenance filters of query, recall, context and activity: which origins and which trust level a reader wants.
import type { Origin, Provenance, Trust } from "../storage/provenance.js";

export interface ProvenanceFilter {
  /** Only entries of these origins; undefined: every origin. */
  readonly origins: ReadonlySet<Origin> | undefined;
  /** Only entries of this trust level; undefined: any. */
  readonly trust: Trust | undefined;
}

export const NO_PROVENANCE_FILTER: ProvenanceFilter = { origins: undefined, trust: undefined };

export function isProvenanceUnfiltered(filter: ProvenanceFilter | undefined): boolean {
  return filter === undefined || (filter.origins === undefined && filter.trust === undefined);
}

export function matchesProvenance(filter: ProvenanceFilter | undefined, provenance: Provenance): boolean {
  if (filter === undefined) return true;
  if (filter.origins !== undefined && !filter.origins.has(provenance.origin)) return false;
  return filter.trust === undefined || filter.trust === provenance.trust;
}

/** The filter as canonical JSON-ready parts (page tokens and remembered totals compare filters by this). */
export function provenanceSignature(filter: ProvenanceFilter | undefined): [string[] | null, string | null] {
  if (filter === undefined) return [null, null];
  return [filter.origins === undefined ? null : [...filter.origins].sort(), filter.trust ?? null];
}
