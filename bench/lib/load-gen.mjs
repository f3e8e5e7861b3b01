// Load generation: closed-loop clients (each sends its next request once the last is answered) and an open-loop
// scheduler (requests leave at a fixed rate whatever the answers do), with errors tallied by kind.
import { ApiError, summarize } from "./api.mjs";
import { sleep } from "./server.mjs";

const GRPC_CODES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
  "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
];

/** A short name for what went wrong: `HTTP 429`, `gRPC UNAVAILABLE`, `ECONNRESET`, `TimeoutError`, … */
export function errorKind(e) {
  if (e instanceof ApiError) return `HTTP ${e.status}`;
  if (e && typeof e.code === "number" && "details" in e) return `gRPC ${GRPC_CODES[e.code] ?? e.code}`;
  if (e && typeof e.code === "string") return e.code;
  return e?.name ?? "Error";
}

/** Errors counted by kind, each with the first message seen. */
export class ErrorTally {
  #kinds = new Map();
  count = 0;

  add(e) {
    this.count++;
    const kind = errorKind(e);
    const known = this.#kinds.get(kind);
    if (known) known.count++;
    else this.#kinds.set(kind, { count: 1, example: String(e?.message ?? e).slice(0, 300) });
  }

  summary() {
    return { total: this.count, by_kind: Object.fromEntries(this.#kinds) };
  }
}

/**
 * Runs `concurrency` closed-loop clients for `warmupMs` + `durationMs`; `op(client, i)` sends one request and resolves
 * with the number of items it carried (or nothing, for 1). Throughput counts requests answered inside the measured
 * window; latency covers requests sent inside it (each awaited to its end); errors cover the whole run, warm-up
 * included. A client stops sending once the window is over.
 */
export async function closedLoop({ concurrency, warmupMs, durationMs, op }) {
  const latencies = [];
  const errors = new ErrorTally();
  let answered = 0;
  let items = 0;
  const started = performance.now();
  const from = started + warmupMs;
  const to = from + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let i = 0; performance.now() < to; i++) {
        const t0 = performance.now();
        let carried;
        try {
          carried = (await op(client, i)) ?? 1;
        } catch (e) {
          errors.add(e);
          continue;
        }
        const t1 = performance.now();
        if (t0 >= from) latencies.push(t1 - t0);
        if (t1 >= from && t1 <= to) {
          answered++;
          items += carried;
        }
      }
    }),
  );
  const seconds = durationMs / 1000;
  return {
    ops_per_s: answered / seconds,
    items_per_s: items / seconds,
    latency_ms: summarize(latencies),
    errors: errors.summary(),
    wall_ms: performance.now() - started,
  };
}

/**
 * Sends requests at `ratePerS` for `durationMs`, whatever the answers do: request i is due at start + i / rate and
 * `fire(i, dueAt)` sends it (measure latency from `dueAt`, so that a stalled server shows as latency instead of as
 * fewer requests). At most `maxOutstanding` requests are in flight; a request due beyond that is not sent and is
 * reported to `onDropped(i)`. `stop()` returning true ends the sending early. Resolves once the last request sent has
 * settled.
 */
export async function openLoop({ ratePerS, durationMs, maxOutstanding = 1000, fire, onDropped = () => {}, stop = () => false }) {
  const started = performance.now();
  const total = Math.floor((durationMs / 1000) * ratePerS);
  const pending = new Set();
  let issued = 0;
  while (issued < total && !stop()) {
    const due = Math.min(total, Math.floor(((performance.now() - started) * ratePerS) / 1000) + 1);
    for (; issued < due; issued++) {
      if (pending.size >= maxOutstanding) {
        onDropped(issued);
        continue;
      }
      const i = issued;
      const p = Promise.resolve()
        .then(() => fire(i, started + (i * 1000) / ratePerS))
        .catch(() => {}) // fire records its own errors
        .finally(() => pending.delete(p));
      pending.add(p);
    }
    const nextDue = started + (issued * 1000) / ratePerS;
    await sleep(Math.max(1, Math.min(50, nextDue - performance.now())));
  }
  await Promise.all(pending);
}
