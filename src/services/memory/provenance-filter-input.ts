// The `origins` and `trust` filters of query, recall, context and activity, validated at the boundary.
import { invalidArgument, quoted } from "../../platform/errors.js";
import type { ProvenanceFilter } from "../../memory/provenance-filter.js";
import { ORIGINS, TRUST_LEVELS, isOrigin, type Origin } from "../../storage/provenance.js";
import { oneOf } from "./validate.js";

export function provenanceFilterOf(origins: readonly string[], trust: string): ProvenanceFilter {
  let wanted: Set<Origin> | undefined;
  if (origins.length > 0) {
    wanted = new Set();
    for (const value of origins) {
      const origin = value.toLowerCase();
      if (!isOrigin(origin)) throw invalidArgument("origins", `unknown origin ${quoted(value)}; known: ${ORIGINS.join(", ")}`);
      wanted.add(origin);
    }
  }
  const level = trust === "" ? undefined : oneOf("trust", trust, TRUST_LEVELS, "trusted");
  return { origins: wanted, trust: level };
}
