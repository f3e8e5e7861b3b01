// Small coloured labels for states and kinds (entry types, promotion states, readiness...).
const TONES: Record<string, string> = {
  ready: "good",
  active: "good",
  accepted: "good",
  approved: "good",
  validated: "good",
  promoted: "good",
  proposed: "accent",
  auditioning: "warn",
  candidate: "accent",
  pending: "accent",
  acknowledged: "accent",
  quarantined: "bad",
  not_ready: "bad",
  invalidated: "bad",
  blocked: "bad",
  refused: "bad",
  gone: "bad",
  changes_requested: "warn",
  idle: "warn",
  retired: "muted",
  archived: "muted",
};

export function Badge({ text, tone }: { text: string; tone?: string }) {
  if (!text) return null;
  return <span class={`badge tone-${tone ?? TONES[text] ?? "muted"}`}>{text.replaceAll("_", " ")}</span>;
}

/** Entry types get a colour of their own, the same in the timeline, evidence and context sources. */
export function TypeBadge({ type }: { type: string }) {
  return <span class={`badge type type-${type}`}>{type.replaceAll("_", " ")}</span>;
}
