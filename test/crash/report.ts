// Prints a crash-loop report: kills, requests per route (acknowledged, unknown, refused), violations and server
// errors with the seed that repeats the run, and the time taken.
import type { CrashReport } from "./loop.js";

export function totals(report: CrashReport): { requests: number; acked: number; unknown: number; refused: number } {
  let acked = 0;
  let unknown = 0;
  let refused = 0;
  for (const c of report.counts.values()) {
    acked += c.acked;
    unknown += c.unknown;
    refused += c.refused;
  }
  return { requests: acked + unknown + refused, acked, unknown, refused };
}

export function formatReport(report: CrashReport): string {
  const t = totals(report);
  const lines = [
    `crash loop: seed ${report.seed} (CRASH_SEED=${report.seed} repeats it), ${report.kills} kills, ${(report.durationMs / 1000).toFixed(1)} s`,
    `requests: ${t.requests} (${t.acked} acknowledged, ${t.unknown} unknown, ${t.refused} refused)`,
    `  ${"route".padEnd(32)} ${"acked".padStart(7)} ${"unknown".padStart(7)} ${"refused".padStart(7)}`,
  ];
  for (const [route, c] of [...report.counts.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${route.padEnd(32)} ${String(c.acked).padStart(7)} ${String(c.unknown).padStart(7)} ${String(c.refused).padStart(7)}`);
  }
  lines.push(`violations: ${report.violations.length}`);
  for (const v of report.violations.slice(0, 50)) lines.push(`  ${v}`);
  if (report.violations.length > 50) lines.push(`  … and ${report.violations.length - 50} more`);
  lines.push(`server errors logged: ${report.serverErrors.length}`);
  for (const e of report.serverErrors.slice(0, 10)) lines.push(`  ${e.slice(0, 500)}`);
  return lines.join("\n");
}
