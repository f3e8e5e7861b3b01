// The crash loop: a built server in a child process on one data directory, a mixed workload from several clients,
// SIGKILL at a seeded random moment while requests are in flight, a restart on the same directory, and the oracle's
// check after every restart. Returns what happened: kills, requests per route and outcome, violations, time.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { mintApiKey } from "../../src/auth/api-key.js";
import { Rng } from "../fuzz/prng.js";
import { ensureBuilt, startChild, type ChildServer } from "../harness/child-server.js";
import { createUser } from "../harness/users.js";
import { read, type Ctx, type RouteCounts } from "./context.js";
import { World } from "./model.js";
import { check } from "./oracle.js";
import { Sender } from "./sender.js";
import { runClient } from "./workload.js";

export interface CrashOptions {
  readonly seed: number;
  readonly kills: number;
  /** Concurrent clients; default 4. */
  readonly clients?: number;
  /** The workload runs this long (drawn per kill, in ms) before the kill. */
  readonly minRunMs?: number;
  readonly maxRunMs?: number;
  readonly onProgress?: (report: CrashReport) => void;
  readonly progressEvery?: number;
}

export interface CrashReport {
  readonly seed: number;
  kills: number;
  readonly counts: Map<string, RouteCounts>;
  readonly violations: string[];
  /** Lines the server logged at level error or fatal. */
  readonly serverErrors: string[];
  durationMs: number;
}

/** Environment of the child: every core route open, search included, with the fast offline embedder. */
function serverEnv(dataDir: string, adminKey: string): Record<string, string> {
  return {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_LOG_LEVEL: "warn",
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_EMBEDDER: "hashed",
  };
}

/** pino's error (50) and fatal (60) lines of one child's output. */
function errorLines(child: ChildServer): string[] {
  return `${child.stdout()}\n${child.stderr()}`.split("\n").filter((line) => /"level":(50|60)/.test(line));
}

export async function runCrashLoop(options: CrashOptions): Promise<CrashReport> {
  ensureBuilt();
  const started = Date.now();
  const clients = options.clients ?? 4;
  const report: CrashReport = { seed: options.seed, kills: 0, counts: new Map(), violations: [], serverErrors: [], durationMs: 0 };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-crash-"));
  const adminKey = mintApiKey("local").key;
  const env = serverEnv(dataDir, adminKey);
  let child = await startChild(env);
  const pending: Ctx["pending"] = [];
  try {
    const key = await createUser(child.baseUrl, adminKey, "crash-loop");
    let killed = false;
    let sender = new Sender(child.baseUrl, () => killed);
    const base = { key, adminKey, counts: report.counts, pending, violations: report.violations, kill: () => report.kills };
    const setup: Ctx = { ...base, world: new World(clients, 2, ""), sender, rng: new Rng(options.seed) };
    const project = (await read(setup, "engram.v2.ResourcesService/CreateProject", { name: "crash-loop" }))["project"] as Record<string, unknown>;
    const world = new World(clients, 2, String(project["project_id"]));
    const checkRng = new Rng(options.seed ^ 0x5bd1e995);
    for (let kill = 1; kill <= options.kills; kill++) {
      const ctx: Ctx = { ...base, world, sender, rng: checkRng };
      await check(ctx);
      const killRng = Rng.forRequest(options.seed, kill * 64);
      const runMs = killRng.between(options.minRunMs ?? 50, options.maxRunMs ?? 600);
      let killNow!: () => void;
      const calledIn = new Promise<void>((resolve) => (killNow = resolve));
      const workers = world.clients.map((client) =>
        runClient({ ...ctx, killNow, rng: Rng.forRequest(options.seed, kill * 64 + 1 + client.index) }, client, () => killed).catch((e: unknown) => {
          report.violations.push(`after kill ${report.kills}: client ${client.index} failed: ${e instanceof Error ? e.message : String(e)}`);
        }),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([calledIn, new Promise((resolve) => (timer = setTimeout(resolve, runMs)))]);
      clearTimeout(timer);
      if (child.process.exitCode !== null || child.process.signalCode !== null) {
        report.violations.push(`after kill ${report.kills}: the server exited by itself: ${child.stderr().slice(-2000)}`);
      }
      killed = true;
      await child.kill("SIGKILL");
      await Promise.all(workers);
      report.kills = kill;
      report.serverErrors.push(...errorLines(child));
      sender.close();
      child = await startChild(env);
      killed = false;
      sender = new Sender(child.baseUrl, () => killed);
      if (options.onProgress !== undefined && kill % (options.progressEvery ?? 10) === 0) {
        report.durationMs = Date.now() - started;
        options.onProgress(report);
      }
    }
    // The last restart: settle what the last kill left in doubt, then check once more that the retries held.
    const ctx: Ctx = { ...base, world, sender, rng: checkRng };
    await check(ctx);
    await check(ctx);
    sender.close();
  } catch (e: unknown) {
    report.violations.push(`after kill ${report.kills}: the loop stopped: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  } finally {
    report.serverErrors.push(...errorLines(child));
    if (child.process.exitCode === null && child.process.signalCode === null) await child.kill("SIGTERM");
    fs.rmSync(dataDir, { recursive: true, force: true });
    report.durationMs = Date.now() - started;
  }
  return report;
}
