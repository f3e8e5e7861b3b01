// A uPlot time-series chart sized to its container; uPlot draws on canvas, so it needs no inline script or style tag.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ChartSeries {
  readonly label: string;
  readonly colour: string;
  readonly values: readonly (number | null)[];
}

const HEIGHT = 200;
const clock = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit" });

/** Shortest x axis, in seconds: uPlot stretches a single sample over 1000 days, and a few seconds look like noise. */
const MIN_SPAN_S = 60;

function alignedData(times: readonly number[], series: readonly ChartSeries[]): uPlot.AlignedData {
  const seconds = times.map((t) => t / 1000);
  const values = series.map((s) => s.values.slice());
  const first = seconds[0];
  const last = seconds[seconds.length - 1];
  // A gap (null values) at the start widens a short series to the minimum span without inventing samples.
  if (first !== undefined && last !== undefined && last - first < MIN_SPAN_S) {
    seconds.unshift(last - MIN_SPAN_S);
    for (const column of values) column.unshift(null);
  }
  return [seconds, ...values];
}

export function TimeChart({ title, unit, times, series }: {
  title: string;
  unit: string;
  /** Epoch milliseconds, ascending. */
  times: readonly number[];
  series: readonly ChartSeries[];
}) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const shape = `${unit}|${series.map((s) => `${s.label}:${s.colour}`).join(",")}`;

  // The plot is built once per set of series; new samples only replace its data, so refreshing does not flicker.
  useEffect(() => {
    const element = host.current;
    if (!element) return;
    const width = () => Math.max(240, element.clientWidth);
    const created = new uPlot(
      {
        width: width(),
        height: HEIGHT,
        scales: {
          x: { time: true },
          y: { range: (_u, _min, max) => [0, Math.max(max, 1e-6) * 1.15] },
        },
        // Clock times only: uPlot's default adds a second line of dates that crowds a narrow chart.
        axes: [{ values: (_u, splits) => splits.map((s) => clock.format(s * 1000)) }, { label: unit, size: 60 }],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.colour, width: 2 }))],
      },
      alignedData(times, series),
      element,
    );
    plot.current = created;
    const resize = new ResizeObserver(() => created.setSize({ width: width(), height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      created.destroy();
      plot.current = null;
    };
  }, [shape]);

  useEffect(() => {
    plot.current?.setData(alignedData(times, series));
  }, [times, series]);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={host} class="chart-canvas" role="img" aria-label={title} />
    </figure>
  );
}
