// The checkpoint a control session's close leaves in its run: the session's summary and the run's most recent
// entries, oldest first, under a token budget, with those entries as its lineage.
import { countTokens } from "../retrieval/context/token-counter.js";
import { newEntry, type EntryStore, type NewEntry } from "../storage/entry-store.js";
import type { ControlSessionRecord } from "./control-session-record.js";
import { DEFAULT_TRUST_POLICY, leastTrust, writeProvenance, type TrustPolicy } from "../storage/provenance.js";

/** Recent entries the final checkpoint holds at most. */
export const FINAL_CHECKPOINT_ENTRIES = 50;
/** Tokens (o200k_base) the final checkpoint's text holds at most. */
export const FINAL_CHECKPOINT_TOKENS = 2_000;
/** One entry's text is cut to this many characters in the checkpoint. */
const ENTRY_CHARS = 400;
/** Run entries looked at to find the recent ones (checkpoints are skipped): a bounded, synchronous read. */
const MAX_SCANNED = 200;
export const FINAL_CHECKPOINT_LABEL = "session_close";

/** Who closes the session: the closing key, and the trust policy its checkpoint's trust comes from. */
export interface Closer {
  readonly keyId: string;
  readonly trustPolicy: TrustPolicy;
}

export function finalCheckpoint(
  entries: EntryStore,
  session: ControlSessionRecord,
  ingestCount: number,
  now: number,
  closer: Closer = { keyId: "", trustPolicy: DEFAULT_TRUST_POLICY },
): NewEntry {
  const header = `Control session ${session.runId} closed at ${new Date(now).toISOString()}; opened at ${new Date(session.createdAt).toISOString()}; ${ingestCount} entries written during it.`;
  let budget = FINAL_CHECKPOINT_TOKENS - countTokens(header);
  const lines: string[] = [];
  const sourceIds: string[] = [];
  // The server writes the checkpoint (origin `system`), but it quotes the run's entries: untrusted text stays so.
  let trust = closer.trustPolicy.system;
  let scanned = 0;
  for (const seq of entries.visibleSeqs(session.owner, session.runId, true)) {
    if (++scanned > MAX_SCANNED || lines.length >= FINAL_CHECKPOINT_ENTRIES) break;
    const entry = entries.get(seq);
    if (entry === undefined || entry.entryType === "checkpoint") continue;
    const line = `- [${entry.entryType}] ${clip(entry.content.replace(/\s+/g, " ").trim())}`;
    const cost = countTokens(line) + 1;
    if (cost > budget) break;
    budget -= cost;
    lines.push(line);
    sourceIds.push(entry.id);
    trust = leastTrust(trust, entry.provenance.trust);
  }
  // Read newest first: the checkpoint tells them in the order they happened.
  lines.reverse();
  sourceIds.reverse();
  const body = lines.length === 0 ? "The run holds no entries." : `Recent context:\n${lines.join("\n")}`;
  return newEntry({
    owner: session.owner,
    runId: session.runId,
    agentId: session.agentId,
    entryType: "checkpoint",
    content: `${header}\n${body}`,
    importance: "high",
    metadataJson: JSON.stringify({ label: FINAL_CHECKPOINT_LABEL, session_id: session.runId, written_by: "session_close" }),
    occurrenceTime: Math.floor(now / 1000),
    source: "system",
    sourceIds,
    provenance: { ...writeProvenance("system", closer.keyId, closer.trustPolicy), trust },
  });
}

function clip(text: string): string {
  return text.length > ENTRY_CHARS ? `${text.slice(0, ENTRY_CHARS)}…` : text;
}
