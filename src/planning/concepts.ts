// Run concepts: a named definition with related concepts and an optional schema, stored together with a memory
// entry of the definition (one transaction), so that query, recall and context find it; redefining supersedes both.
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import type { EntryWriter } from "../memory/entry-writer.js";
import type { Storage } from "../storage/database.js";
import { newEntry, type EntryStore, type WrittenEntry } from "../storage/entry-store.js";
import { decodeOptional } from "../storage/record-codec.js";
import { PLANNING_LIMITS, decodeConcept, newRecordVersion, type ConceptRecord } from "./planning-records.js";
import { runRange } from "../storage/key-range.js";
import { DEFAULT_TRUST_POLICY, writeProvenance, type TrustPolicy } from "../storage/provenance.js";

export interface ConceptDefinition {
  readonly owner: number;
  readonly runId: string;
  readonly name: string;
  readonly definition: string;
  readonly relatedConcepts: readonly string[];
  readonly schemaJson: string;
  /** API key that defines the concept; stored in its entry's provenance. */
  readonly keyId?: string;
}

export interface ConceptPage {
  readonly concepts: readonly ConceptRecord[];
  readonly nextAfter: string | undefined;
}

/** The upsert key of a concept's memory entry: a newer definition supersedes the older entry. */
export function conceptUpsertKey(name: string): string {
  return `engram:concept:${name}`;
}

/** The searchable text of a concept: its name, definition, related concepts and schema. */
export function conceptText(concept: Pick<ConceptDefinition, "name" | "definition" | "relatedConcepts" | "schemaJson">): string {
  const lines = [concept.definition === "" ? concept.name : `${concept.name}: ${concept.definition}`];
  if (concept.relatedConcepts.length > 0) lines.push(`Related concepts: ${concept.relatedConcepts.join(", ")}`);
  if (concept.schemaJson !== "{}") lines.push(`Schema: ${concept.schemaJson}`);
  return lines.join("\n");
}

export class Concepts {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #writer: EntryWriter;
  readonly #events: EventBus;
  readonly #trustPolicy: TrustPolicy;

  constructor(storage: Storage, entries: EntryStore, writer: EntryWriter, events: EventBus, trustPolicy: TrustPolicy = DEFAULT_TRUST_POLICY) {
    this.#trustPolicy = trustPolicy;
    this.#storage = storage;
    this.#entries = entries;
    this.#writer = writer;
    this.#events = events;
  }

  async define(definition: ConceptDefinition): Promise<ConceptRecord> {
    const { owner, runId, name } = definition;
    const now = Date.now();
    const entry = newEntry({
      owner,
      runId,
      entryType: "fact",
      content: conceptText(definition),
      metadataJson: JSON.stringify({ concept: name, related_concepts: definition.relatedConcepts }),
      occurrenceTime: Math.floor(now / 1000),
      upsertKey: conceptUpsertKey(name),
      source: "agent",
      provenance: writeProvenance("agent", definition.keyId ?? "", this.#trustPolicy),
    });
    const prepared = await this.#writer.prepare([{ entry }]);
    const { record, written } = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const key = [owner, runId, name];
      const current = decodeOptional(dbs.planConcepts.get(key), (value) => decodeConcept(key, value));
      if (current === undefined && dbs.planConcepts.getKeysCount(runRange(owner, runId)) >= PLANNING_LIMITS.conceptsPerRun) {
        throw new ConnectError(`run already holds ${PLANNING_LIMITS.conceptsPerRun} concepts`, Code.ResourceExhausted);
      }
      const written: WrittenEntry[] = this.#entries.writeInTransaction(prepared, now);
      const stored = written[0];
      if (stored === undefined) throw new Error("the concept's entry was not written");
      const record: ConceptRecord = {
        v: newRecordVersion,
        name,
        definition: definition.definition,
        relatedConcepts: [...definition.relatedConcepts],
        schemaJson: definition.schemaJson,
        entryId: stored.record.id,
        createdAt: current?.createdAt ?? now,
        updatedAt: now,
      };
      dbs.planConcepts.put(key, record);
      return { record, written };
    });
    this.#writer.committed(written, prepared, "concept");
    this.#events.publish({ type: "concept.defined", owner, runId, agentId: "", payload: JSON.stringify({ name, entry_id: record.entryId }) });
    return record;
  }

  list(owner: number, runId: string, after: string | undefined, limit: number): ConceptPage {
    const range = runRange(owner, runId);
    const start = after === undefined ? range.start : [owner, runId, after];
    const concepts: ConceptRecord[] = [];
    let more = false;
    for (const { key, value } of this.#storage.dbs.planConcepts.getRange({ start, end: range.end, limit: limit + 2 })) {
      const record = decodeConcept(key, value);
      if (record.name === after) continue;
      if (concepts.length === limit) {
        more = true;
        break;
      }
      concepts.push(record);
    }
    return { concepts, nextAfter: more ? concepts[concepts.length - 1]?.name : undefined };
  }
}
