// Prints a fuzz report: counts per transport and status, time, memory, the victim check and every failure with the
// seed and request needed to reproduce it.
import type { FuzzReport } from "./run.js";

function mb(kb: number | undefined): string {
  return kb === undefined ? "?" : `${(kb / 1024).toFixed(1)} MB`;
}

export function formatReport(report: FuzzReport): string {
  const lines: string[] = [];
  const seconds = report.durationMs / 1000;
  lines.push(`fuzz seed ${report.seed}: ${report.requests} requests in ${seconds.toFixed(1)} s (${Math.round(report.requests / Math.max(seconds, 0.001))}/s), ${report.succeeded} succeeded`);
  lines.push(`per transport: ${Object.entries(report.byTransport).map(([t, n]) => `${t} ${n}`).join(", ")}`);
  lines.push("statuses:");
  for (const [key, count] of Object.entries(report.statuses).sort(([a], [b]) => a.localeCompare(b))) lines.push(`  ${key.padEnd(40)} ${count}`);
  const called = new Set(Object.values(report.called).flatMap((set) => [...set]));
  const neverOk = [...called].filter((rpc) => (report.succeededBy[rpc] ?? 0) === 0).sort();
  lines.push(`RPCs that never succeeded (${neverOk.length} of ${called.size}): ${neverOk.join(", ") || "none"}`);
  lines.push(`slowest answer: ${Math.round(report.slowestMs)} ms (${report.slowest})`);
  const warm = report.memoryAfterWarmup;
  const end = report.memoryAfterRun;
  lines.push(`server memory after warm-up: RSS ${mb(warm?.rssKb)}, anonymous ${mb(warm?.anonKb)}; after the run: RSS ${mb(end?.rssKb)}, anonymous ${mb(end?.anonKb)}`);
  lines.push(`server anonymous memory every ${Math.round(report.requests / Math.max(1, report.memorySeries.length))} requests (MB): ${report.memorySeries.map((kb) => Math.round(kb / 1024)).join(" ")}`);
  lines.push(`memory floor growth (second quarter to last): ${mb(report.memoryGrowthKb)}; /metrics after the run: ${(report.metricsBytes / 1024).toFixed(0)} kB`);
  lines.push(report.victimChanged.length === 0 ? "victim's data: unchanged" : `victim's data CHANGED on: ${report.victimChanged.join(", ")}`);
  lines.push(report.logErrors.length === 0 ? "server log: no errors" : `server log: ${report.logErrors.length} error lines`);
  for (const line of report.logErrors.slice(0, 10)) lines.push(`  ${line}`);
  lines.push(`failures: ${report.failureCount}${report.failureCount > report.failures.length ? ` (first ${report.failures.length} shown)` : ""}`);
  for (const f of report.failures) {
    lines.push(`--- ${f.problem} — ${f.transport} ${f.rpc}, key ${f.keyKind}, ${f.variation} (FUZZ_SEED=${f.seed}, request #${f.index})`);
    lines.push(`request: ${f.request}`);
    lines.push(`answer: ${f.answer}`);
  }
  return lines.join("\n");
}

/** The failures grouped by problem and RPC, for a short summary. */
export function failureKinds(report: FuzzReport): string[] {
  const kinds = new Map<string, number>();
  for (const f of report.failures) kinds.set(`${f.problem} — ${f.transport} ${f.rpc}`, (kinds.get(`${f.problem} — ${f.transport} ${f.rpc}`) ?? 0) + 1);
  return [...kinds.entries()].map(([kind, n]) => `${n}× ${kind}`);
}
