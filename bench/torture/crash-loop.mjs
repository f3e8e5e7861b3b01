// `make torture`: the crash loop at length (CRASH_KILLS, default 500; CRASH_SEED, default random): a mixed workload
// over every write route against a child server killed with SIGKILL at random moments and restarted on the same
// data directory, with the oracle's check after every restart. Prints kills, requests per route and outcome,
// violations (with the seed that repeats the run) and time; exits 1 on any violation. Needs `make build` and
// `tsc -p bench/torture/tsconfig.json` first.
import { runCrashLoop } from "../../dist/torture/test/crash/loop.js";
import { formatReport, totals } from "../../dist/torture/test/crash/report.js";

const seed = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const kills = Number(process.env.CRASH_KILLS ?? 500);
process.stdout.write(`crash loop: ${kills} kills, seed ${seed} (CRASH_SEED=${seed} repeats this run)\n`);

let printed = 0;
const report = await runCrashLoop({
  seed,
  kills,
  progressEvery: Number(process.env.CRASH_PROGRESS ?? 25),
  onProgress(r) {
    const t = totals(r);
    process.stdout.write(`  ${r.kills} kills, ${t.acked} acknowledged, ${t.unknown} unknown, ${r.violations.length} violations, ${(r.durationMs / 1000).toFixed(0)} s\n`);
    // New violations at once: a long run shows what it found without waiting for the end.
    for (const v of r.violations.slice(printed)) process.stdout.write(`    ${v}\n`);
    printed = r.violations.length;
  },
});
process.stdout.write(`${formatReport(report)}\n`);
process.exit(report.violations.length > 0 || report.serverErrors.length > 0 ? 1 : 0);
