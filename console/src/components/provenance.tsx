// Where an entry's text came from, shown beside evidence, context sources, timeline entries and lessons: its origin
// (with the tool or URL), its trust level, the writing key and the agent, and what ingest noticed about it.
import type { Provenance } from "../types";
import { Badge } from "./badge";

export function ProvenanceChips({ provenance, showAgent = true }: { provenance?: Provenance | null; showAgent?: boolean }) {
  if (!provenance || !provenance.origin) return null;
  const where = provenance.tool_name || provenance.url;
  return (
    <span class="provenance" aria-label={`provenance: ${provenance.origin}, ${provenance.trust}`}>
      <Badge text={`from ${provenance.origin}`} tone="muted" />
      {where && (
        <span class="provenance-where mono" title={where}>
          {where}
        </span>
      )}
      <Badge text={provenance.trust} tone={provenance.trust === "untrusted" ? "warn" : "good"} />
      {provenance.flags.map((flag) => (
        <Badge key={flag} text={flag} tone="bad" />
      ))}
      {showAgent && provenance.agent_id && <span class="agent-chip">{provenance.agent_id}</span>}
      {provenance.key_id && (
        <span class="provenance-key mono muted" title="API key that wrote the entry">
          key {provenance.key_id}
        </span>
      )}
    </span>
  );
}
