// A half-circle gauge: how much of a budget is used, coloured by how close it is to full.
export function Gauge({ used, total, label, unit }: { used: number; total: number; label: string; unit: string }) {
  const share = total > 0 ? Math.min(1, used / total) : 0;
  const tone = total === 0 ? "muted" : share >= 0.95 ? "bad" : share >= 0.75 ? "warn" : "good";
  // The arc runs from the left end (180°) to the right end (0°) of a circle of radius 80 centred at (100, 100).
  const angle = Math.PI * (1 - share);
  const x = 100 + 80 * Math.cos(angle);
  const y = 100 - 80 * Math.sin(angle);
  return (
    <figure class={`gauge tone-${tone}`}>
      <svg
        viewBox="0 0 200 115"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={used}
        aria-valuetext={total > 0 ? `${used} of ${total} ${unit}` : `${used} ${unit}, no budget`}
      >
        <path class="gauge-track" d="M 20 100 A 80 80 0 0 1 180 100" />
        {share > 0 && <path class="gauge-fill" d={`M 20 100 A 80 80 0 0 1 ${x.toFixed(2)} ${y.toFixed(2)}`} />}
        <text class="gauge-value" x="100" y="88" text-anchor="middle">
          {total > 0 ? `${Math.round(share * 100)}%` : "∞"}
        </text>
        <text class="gauge-caption" x="100" y="108" text-anchor="middle">
          {total > 0 ? `${used} / ${total} ${unit}` : `${used} ${unit}`}
        </text>
      </svg>
      <figcaption>{label}</figcaption>
    </figure>
  );
}
