// Maps stored entries and ranked hits to the QueryEvidence message of answers and context blocks.
import type { QueryEvidence } from "../../../gen/engram/v2/memory_service_pb.js";
import { isStaleRecord, type EntryRecord, type EntryView } from "../../storage/entry-store.js";
import type { Hit, RetrievalMode } from "../../retrieval/search-engine.js";
import { provenanceView } from "../../memory/provenance-view.js";
import { iso } from "../iso-time.js";

export type EvidenceInit = Omit<QueryEvidence, "$typeName" | "explainInfo" | "provenance"> & {
  explainInfo?: QueryEvidence["explainInfo"];
  provenance?: QueryEvidence["provenance"];
};

/** `view`: what the store knows of the entry beyond its record (EntryStore.viewOf): expiry with retention, supersedes. */
export function evidenceOfEntry(entry: EntryRecord, score: number, mode: RetrievalMode, view: EntryView): EvidenceInit {
  return {
    id: entry.id,
    content: entry.content,
    score: Math.round(score * 1e6) / 1e6,
    isStale: isStaleRecord(entry),
    supersededBy: entry.supersededBy,
    retrievalMode: mode,
    referenceId: entry.referenceId,
    referenceable: entry.referenceId !== "",
    originEntryType: entry.entryType,
    runId: entry.runId,
    entryType: entry.entryType,
    metadataJson: entry.metadataJson,
    agentId: entry.agentId,
    lane: entry.lane,
    occurrenceTime: BigInt(entry.occurrenceTime),
    createdAt: new Date(entry.createdAt).toISOString(),
    provenance: provenanceView(entry),
    expiresAt: iso(view.expiresAt),
    supersedes: [...view.supersedes],
    absorbedIds: [...entry.absorbedIds],
  };
}

export function evidenceOfHit(hit: Hit, explain: boolean, rankBy: string, view: EntryView): EvidenceInit {
  const evidence = evidenceOfEntry(hit.entry, hit.score, hit.mode, view);
  if (!explain) return evidence;
  return {
    ...evidence,
    explainInfo: {
      $typeName: "engram.v2.ExplainInfo",
      semanticScore: hit.parts.semantic,
      lexicalScore: hit.parts.lexical,
      recencyScore: hit.parts.recency,
      temporalDecayFactor: 1,
      stalePenaltyApplied: hit.parts.stalePenalty,
      fusionWeightsUsed: { ...hit.parts.weights },
      temporalIntentDetected: false,
      rankByMode: rankBy,
    },
  };
}
