// Samples the process's own Prometheus metrics into a bounded ring of rates for the console's health page.
import type { Metrics } from "../platform/metrics.js";

/** The RPCs whose latency the console charts as query latency: the ones that search or assemble memory. */
export const QUERY_RPCS: ReadonlySet<string> = new Set([
  "engram.v2.MemoryService/Query",
  "engram.v2.MemoryService/Recall",
  "engram.v2.MemoryService/GetContext",
  "engram.v2.RunsService/GetContextSnapshot",
  "engram.v2.LearningService/SurfaceStrategies",
  "engram.v2.CoreService/SearchNodes",
]);

export interface SeriesPoint {
  /** End of the sampled interval, epoch ms. */
  readonly t: number;
  readonly ingest_items_per_s: number;
  /** Estimated from histogram buckets as Prometheus' histogram_quantile does; null when no query ran. */
  readonly query_p50_ms: number | null;
  readonly query_p99_ms: number | null;
  readonly requests_per_s: number;
}

export interface Series {
  readonly interval_ms: number;
  readonly points: readonly SeriesPoint[];
}

export interface SamplerOptions {
  readonly intervalMs: number;
  /** Points kept; the oldest is dropped beyond it. */
  readonly capacity: number;
  readonly now: () => number;
}

/** Cumulative totals at one instant; a point is the difference of two of them. */
interface Totals {
  readonly t: number;
  readonly ingestItems: number;
  readonly requests: number;
  /** Cumulative query counts per finite bucket upper bound (seconds), summed over every query RPC and label. */
  readonly queryBuckets: ReadonlyMap<number, number>;
  readonly queries: number;
}

/** The q-quantile of the observations counted between two cumulative bucket sets, in ms; null when there are none. */
export function bucketQuantile(q: number, before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, total: number): number | null {
  if (total <= 0) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  const bounds = [...after.keys()].sort((a, b) => a - b);
  for (const bound of bounds) {
    const count = (after.get(bound) ?? 0) - (before.get(bound) ?? 0);
    if (count >= rank) {
      const inBucket = count - lowerCount;
      const fraction = inBucket <= 0 ? 1 : (rank - lowerCount) / inBucket;
      return roundMs((lowerBound + (bound - lowerBound) * fraction) * 1000);
    }
    lowerBound = bound;
    lowerCount = count;
  }
  // Beyond the last finite bucket: its bound is the best estimate there is (as in histogram_quantile).
  return roundMs(lowerBound * 1000);
}

function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

function perSecond(delta: number, ms: number): number {
  return Math.round((Math.max(0, delta) / (ms / 1000)) * 1000) / 1000;
}

export class MetricsSampler {
  readonly #metrics: Metrics;
  readonly #options: SamplerOptions;
  readonly #points: SeriesPoint[] = [];
  #last: Totals | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** One sample at a time: two interleaved reads would produce a point from a stale baseline. */
  #sampling: Promise<void> | undefined;

  constructor(metrics: Metrics, options: SamplerOptions) {
    this.#metrics = metrics;
    this.#options = options;
  }

  /** Takes the baseline and samples every interval; the timer does not keep the process alive. */
  start(): void {
    void this.sample();
    this.#timer = setInterval(() => void this.sample(), this.#options.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Samples now when the last sample is an interval old or more, so a reader never waits a whole interval. */
  async sampleIfDue(): Promise<void> {
    const last = this.#last;
    if (last === undefined || this.#options.now() - last.t >= this.#options.intervalMs) await this.sample();
  }

  sample(): Promise<void> {
    this.#sampling ??= this.#sampleOnce().finally(() => (this.#sampling = undefined));
    return this.#sampling;
  }

  series(): Series {
    return { interval_ms: this.#options.intervalMs, points: [...this.#points] };
  }

  async #sampleOnce(): Promise<void> {
    const totals = await this.#read();
    const last = this.#last;
    // A clock that has not moved (or moved back) gives no rate; keep the older baseline.
    if (last !== undefined && totals.t <= last.t) return;
    this.#last = totals;
    if (last === undefined) return;
    const elapsed = totals.t - last.t;
    const queries = totals.queries - last.queries;
    this.#points.push({
      t: totals.t,
      ingest_items_per_s: perSecond(totals.ingestItems - last.ingestItems, elapsed),
      query_p50_ms: bucketQuantile(0.5, last.queryBuckets, totals.queryBuckets, queries),
      query_p99_ms: bucketQuantile(0.99, last.queryBuckets, totals.queryBuckets, queries),
      requests_per_s: perSecond(totals.requests - last.requests, elapsed),
    });
    if (this.#points.length > this.#options.capacity) this.#points.splice(0, this.#points.length - this.#options.capacity);
  }

  async #read(): Promise<Totals> {
    const [ingest, durations] = await Promise.all([this.#metrics.ingestItems.get(), this.#metrics.rpcDuration.get()]);
    let requests = 0;
    let queries = 0;
    const queryBuckets = new Map<number, number>();
    for (const value of durations.values) {
      const rpc = String(value.labels.rpc ?? "");
      const name = value.metricName ?? "";
      if (name.endsWith("_count")) {
        requests += value.value;
        if (QUERY_RPCS.has(rpc)) queries += value.value;
      } else if (name.endsWith("_bucket") && QUERY_RPCS.has(rpc)) {
        const bound = Number((value.labels as Record<string, string | number | undefined>)["le"]);
        if (Number.isFinite(bound)) queryBuckets.set(bound, (queryBuckets.get(bound) ?? 0) + value.value);
      }
    }
    const ingestItems = ingest.values.reduce((sum, value) => sum + value.value, 0);
    return { t: this.#options.now(), ingestItems, requests, queryBuckets, queries };
  }
}
