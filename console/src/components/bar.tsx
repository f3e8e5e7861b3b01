// Horizontal bars: one value against a maximum, and a labelled row of them for score breakdowns.
export type Tone = "accent" | "good" | "warn" | "bad" | "semantic" | "lexical" | "recency" | "total" | "muted";

export function Bar({ value, max, tone = "accent", label }: { value: number; max: number; tone?: Tone; label: string }) {
  const share = max > 0 ? Math.min(1, Math.max(0, value / max)) : 0;
  return (
    <span class={`bar tone-${tone}`} role="img" aria-label={label} title={label}>
      <span class="fill" style={{ width: `${(share * 100).toFixed(1)}%` }} />
    </span>
  );
}

export interface BarRow {
  readonly name: string;
  readonly value: number;
  readonly tone: Tone;
  readonly detail?: string;
}

/** One line per row: name, bar, value; all rows share `max` so bars compare across a whole list. */
export function BarRows({ rows, max, digits = 3 }: { rows: readonly BarRow[]; max: number; digits?: number }) {
  return (
    <div class="bar-rows">
      {rows.map((row) => (
        <div class="bar-row" key={row.name}>
          <span class="bar-name">{row.name}</span>
          <Bar value={row.value} max={max} tone={row.tone} label={`${row.name} ${row.value.toFixed(digits)}`} />
          <span class="bar-value" title={row.detail}>
            {row.value.toFixed(digits)}
          </span>
        </div>
      ))}
    </div>
  );
}
