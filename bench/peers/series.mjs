// One query series, run the same way for both systems: `clients` closed-loop clients share one list of queries (each
// sends its next once the last is answered); latency per query, throughput over the whole series.
import { round, summarize } from "../lib/api.mjs";

/**
 * Runs `ask(query, i)` (resolving with the number of results) over `inputs` on `clients` concurrent loops, after
 * `warmup` untimed queries. Tolerates a few errors, then rethrows the last.
 */
export async function querySeries(inputs, clients, ask, { warmup = 20 } = {}) {
  for (let i = 0; i < Math.min(warmup, inputs.length); i++) await ask(inputs[i], i);
  const latencies = [];
  let next = 0;
  let errors = 0;
  let empty = 0;
  let lastError;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < inputs.length) {
        const i = next++;
        const t0 = performance.now();
        try {
          const results = await ask(inputs[i], i);
          latencies.push(performance.now() - t0);
          if (results === 0) empty++;
        } catch (e) {
          errors++;
          lastError = e;
          if (errors > Math.max(10, inputs.length / 10)) throw e;
        }
      }
    }),
  );
  const wallMs = performance.now() - started;
  return {
    clients,
    ...summarize(latencies),
    queries_per_s: round((latencies.length / wallMs) * 1000, 0),
    errors,
    empty_results: empty,
    last_error: lastError ? String(lastError.message ?? lastError).slice(0, 300) : undefined,
  };
}
