// The crash loop, short and seeded: a mixed workload over every write route against a child server killed with
// SIGKILL 20 times while requests are in flight, restarted on the same data directory, and checked by the oracle
// after every restart (acknowledged writes present exactly once, deletes kept, idempotent outcomes applied once,
// indexes in agreement with LMDB, at most one active prompt or skill version). `make torture` runs 500 kills.
import { expect, it } from "vitest";
import { runCrashLoop } from "./crash/loop.js";
import { formatReport, totals } from "./crash/report.js";

const SEED = 20_260_513;

it("20 kills under a mixed workload: no acknowledged write lost or doubled, no ghost, no partial request", async () => {
  const report = await runCrashLoop({ seed: SEED, kills: 20, maxRunMs: 300 });
  const summary = formatReport(report);
  expect(report.violations, summary).toEqual([]);
  expect(report.serverErrors, summary).toEqual([]);
  expect(report.kills).toBe(20);
  // The kills must have landed on requests in flight, or the loop proved nothing about them.
  const t = totals(report);
  expect(t.unknown, summary).toBeGreaterThan(0);
  expect(t.acked, summary).toBeGreaterThan(100);
}, 240_000);
