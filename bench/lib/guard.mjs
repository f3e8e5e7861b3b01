// Runs measurement phases behind the quiet-machine guard: wait for other processes to leave the CPUs, measure their
// share while the phase runs, and repeat a disturbed phase; every phase's disturbance is kept for the results file.
import { interferenceMonitor, waitQuietMachine } from "./machine.mjs";

/** Above this share of all cores used by other processes during a phase, the phase is repeated. */
export const MAX_DISTURBANCE = 0.1;

/**
 * Phases that start and stop servers read as somewhat disturbed on a quiet machine: a child's CPU after the last
 * sample before it exits cannot be read any more and counts as "other". They are held to a looser bound.
 */
export const MAX_DISTURBANCE_WITH_RESTARTS = 0.25;

/** Whether other processes' CPU use during a phase disturbed it. Under a second (clock ticks are 10 ms) the quiet
 * check just before the phase is all there is to go on. */
export const disturbed = (load) => load.seconds >= 1 && load.other_processes_cpu_share_mean > load.threshold;

/**
 * A guard configured from BENCH_QUIET_WAIT_S (default 300: how long to wait for a quiet machine before each phase)
 * and BENCH_ATTEMPTS (default 3: tries per disturbed phase). `records` lists, per phase, how disturbed the kept
 * attempt was; `reset()` starts a new list (e.g. per corpus size).
 */
export function phaseGuard({ log = () => {} } = {}) {
  const quietWaitMs = Number(process.env.BENCH_QUIET_WAIT_S ?? 300) * 1000;
  const attempts = Math.max(1, Number(process.env.BENCH_ATTEMPTS ?? 3));
  let records = [];
  return {
    get records() {
      return records;
    },
    reset() {
      records = [];
    },
    /**
     * Runs a measurement phase on a quiet machine: waits for other processes to leave the CPUs, measures their share
     * while `fn` runs, and repeats `fn` (up to BENCH_ATTEMPTS times) when they took more than `threshold`. Returns the
     * least disturbed attempt's value. `fn(attempt)` must be safe to repeat.
     */
    async guarded(label, fn, threshold = MAX_DISTURBANCE) {
      let best;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const quiet = await waitQuietMachine(quietWaitMs);
        const monitor = interferenceMonitor();
        const value = await fn(attempt);
        const load = { ...monitor.stop(), threshold };
        const record = { phase: label, attempts: attempt, quiet_wait_ms: quiet.waited_ms, ...load };
        if (!best || load.other_processes_cpu_share_mean < best.record.other_processes_cpu_share_mean) best = { value, record };
        if (!disturbed(load)) break;
        log(`${label}: other processes used ${Math.round(load.other_processes_cpu_share_mean * 100)} % of the CPUs${attempt < attempts ? ", repeating" : ""}`);
      }
      best.record.attempts_made = records.filter((r) => r.phase === label).length + best.record.attempts;
      records.push(best.record);
      return best.value;
    },
  };
}
