// `make torture`: the descriptor fuzzer at length (FUZZ_REQUESTS, default 100,000; FUZZ_SEED, default random)
// against a child server. Prints counts per transport and status, time, memory and every failure with its seed and
// request; exits 1 on any failure. Needs `make build` and `tsc -p bench/torture/tsconfig.json` first.
import { runFuzz } from "../../dist/torture/test/fuzz/run.js";
import { formatReport, failureKinds } from "../../dist/torture/test/fuzz/report.js";

// Ctrl-C and kill end through process.exit, so the fuzzer's exit hook stops the server and removes its data.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const requests = Number(process.env.FUZZ_REQUESTS ?? 100_000);
const concurrency = Number(process.env.FUZZ_CONCURRENCY ?? 8);
const started = Date.now();
process.stdout.write(`torture: ${requests} requests, seed ${seed} (FUZZ_SEED=${seed} repeats this run), ${concurrency} in flight\n`);

const report = await runFuzz({
  seed,
  requests,
  concurrency,
  timeoutMs: 10_000,
  maxRequestBytes: 128 * 1024,
  embedder: process.env.FUZZ_EMBEDDER === "hashed" ? "hashed" : "wordvec",
  progressEvery: 2000,
  // FUZZ_TRACE=InsertNode prints every request to RPCs whose name contains it, with the answer.
  onAnswer: process.env.FUZZ_TRACE
    ? (rpc, request, answer) => {
        if (rpc.includes(process.env.FUZZ_TRACE)) process.stdout.write(`>>> ${rpc}\n${request.slice(0, 1500)}\n<<< ${answer.slice(0, 600)}\n`);
      }
    : undefined,
  onProgress(done, r) {
    const s = (Date.now() - started) / 1000;
    process.stdout.write(`  ${done} requests, ${r.failureCount} failures, ${s.toFixed(0)} s\n`);
  },
});
process.stdout.write(`${formatReport(report)}\n`);
const kinds = failureKinds(report);
if (kinds.length > 0) process.stdout.write(`failure kinds:\n  ${kinds.join("\n  ")}\n`);
// The floor of the server's memory (see FuzzReport.memoryGrowthKb) may not keep rising over a long run.
const MEMORY_GROWTH_BOUND_KB = 256 * 1024;
const leaked = report.memoryGrowthKb > MEMORY_GROWTH_BOUND_KB;
if (leaked) process.stdout.write(`memory floor grew by more than ${MEMORY_GROWTH_BOUND_KB / 1024} MB\n`);
const failed = report.failureCount > 0 || report.victimChanged.length > 0 || report.logErrors.length > 0 || leaked;
process.exit(failed ? 1 : 0);
