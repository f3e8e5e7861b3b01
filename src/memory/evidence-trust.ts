// How far an entry is trusted as guidance, and what untrusted knowledge may not be. Text read from a tool, a document
// or a web page (or any text flagged instruction-like on ingest) is evidence of what happened, never an instruction:
// a lesson or rule made from it or stated in it stays out of rules, out of the global scope and out of other runs
// until a trusted source or a person corroborates it (see learning/reflection.ts, learning/reinforcement.ts).
import type { EntryRecord, NewEntry } from "../storage/entry-record.js";
import type { Trust } from "../storage/provenance.js";
import { INSTRUCTION_FLAG } from "./instruction-detector.js";

/** An entry's trust as evidence: its provenance's, and `untrusted` whenever ingest flagged it instruction-like. */
export function evidenceTrust(entry: Pick<EntryRecord, "provenance" | "flags">): Trust {
  return entry.provenance.trust === "untrusted" || entry.flags.includes(INSTRUCTION_FLAG) ? "untrusted" : "trusted";
}

export function isUntrustedKnowledge(entry: Pick<EntryRecord, "entryType" | "provenance" | "flags">): boolean {
  return (entry.entryType === "lesson" || entry.entryType === "rule") && evidenceTrust(entry) === "untrusted";
}

/**
 * A new lesson or rule as untrusted knowledge may be stored: a rule becomes a lesson of type `observation`, a lesson
 * of type `rule` an observation, and the `global` scope the run's own (`run`). Other entries, and trusted knowledge,
 * are returned as they are.
 */
export function guardedKnowledge<T extends Pick<NewEntry, "entryType" | "lessonType" | "lessonScope" | "provenance" | "flags">>(entry: T): T {
  if (!isUntrustedKnowledge(entry)) return entry;
  return {
    ...entry,
    entryType: "lesson",
    lessonType: entry.lessonType === "" || entry.lessonType === "rule" ? "observation" : entry.lessonType,
    lessonScope: entry.lessonScope === "" || entry.lessonScope === "global" ? "run" : entry.lessonScope,
  };
}

const ORIGIN_LABELS: Readonly<Record<string, string>> = { tool: "tool output", web: "web page", document: "document" };

/**
 * How the context block labels untrusted evidence (`untrusted web page`, `untrusted tool output`, …; trusted text
 * flagged instruction-like is `instruction-like text`, what the server derived from untrusted evidence `lesson made
 * from untrusted evidence`); "" for trusted evidence.
 */
export function untrustedLabel(entry: Pick<EntryRecord, "provenance" | "flags">): string {
  if (evidenceTrust(entry) === "trusted") return "";
  if (entry.provenance.trust === "trusted") return "instruction-like text";
  if (entry.provenance.origin === "system") return "lesson made from untrusted evidence";
  return `untrusted ${ORIGIN_LABELS[entry.provenance.origin] ?? "text"}`;
}
