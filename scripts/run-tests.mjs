// Runs vitest and ends with the plain line CI reads: "N passed, N failed" (", N skipped" when any).
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const results = ".vitest-results.json";
fs.rmSync(results, { force: true });
const run = spawnSync(
  "npx",
  ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile=${results}`, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
let summary = "0 passed, 1 failed";
if (fs.existsSync(results)) {
  const report = JSON.parse(fs.readFileSync(results, "utf8"));
  const skipped = report.numPendingTests + report.numTodoTests;
  // A file that fails to load counts as a failure even though no test in it ran.
  const failedFiles = report.testResults.filter((file) => file.status === "failed" && file.assertionResults.length === 0).length;
  summary = `${report.numPassedTests} passed, ${report.numFailedTests + failedFiles} failed${skipped ? `, ${skipped} skipped` : ""}`;
}
console.log(summary);
process.exit(run.status ?? 1);
