// Starts the built Engram server as a child process on a free loopback port and guarantees it dies with the bench.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The compiled entry point; BENCH_SERVER points elsewhere (e.g. a build in another outDir). */
export const SERVER_ENTRY = path.resolve(ROOT, process.env.BENCH_SERVER ?? "dist/src/serve.js");
const HOST = "127.0.0.1";

const children = new Set();
const tempDirs = new Set();

function killAll() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  children.clear();
  if (process.env.BENCH_KEEP_DATA !== "1") {
    for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  }
  tempDirs.clear();
}

// Whatever ends the bench (normal exit, an error, Ctrl-C), no server outlives it and no temp dir is left behind.
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping servers\n`);
    killAll();
    process.exit(130);
  });
}
process.on("uncaughtException", (e) => {
  process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
  killAll();
  process.exit(1);
});
process.on("unhandledRejection", (e) => {
  process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
  killAll();
  process.exit(1);
});

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Counts a load-generating child process as this bench's own: the quiet-machine guard does not take its CPU for
 * another process's, and it is killed with the servers when the bench exits.
 */
export function adoptChild(child) {
  children.add(child);
  child.once("exit", () => children.delete(child));
}

/** Pids of the servers (and adopted children) this bench started that are still running. */
export function liveChildPids() {
  return [...children].filter((c) => c.exitCode === null && c.signalCode === null).map((c) => c.pid);
}

/** A fresh temporary directory, removed when the bench exits (unless BENCH_KEEP_DATA=1). */
export function tempDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `engram-bench-${prefix}-`));
  tempDirs.add(dir);
  return dir;
}

export function removeDir(dir) {
  if (process.env.BENCH_KEEP_DATA === "1") {
    process.stderr.write(`bench: kept ${dir}\n`);
    return;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** A port nobody listens on right now, on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once("error", reject);
    probe.listen(0, HOST, () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** An admin key in the server's format: mem_<instance tag>_<16 hex key id>_<64 hex secret>. */
export function mintAdminKey() {
  return `mem_local_${randomBytes(8).toString("hex")}_${randomBytes(32).toString("hex")}`;
}

/** A /proc/<pid>/status memory field in bytes (VmRSS: resident now; VmHWM: peak resident), or undefined. */
export function procMemory(pid, field = "VmRSS") {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat; undefined when unreadable. */
export function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

/**
 * Waits until the process has been idle (under 5 % of a core) for `quietMs`, e.g. until background indexing after an
 * ingest is over. Resolves with the time waited, or with the timeout when it never settles.
 */
export async function waitIdle(pid, { quietMs = 1000, timeoutMs = 180_000 } = {}) {
  const started = performance.now();
  let last = cpuSeconds(pid);
  let quietSince = performance.now();
  while (performance.now() - started < timeoutMs) {
    await sleep(250);
    const now = cpuSeconds(pid);
    if (now === undefined || last === undefined) return performance.now() - started;
    if (now - last > 0.0125) quietSince = performance.now(); // more than 5 % of a core over 250 ms
    last = now;
    if (performance.now() - quietSince >= quietMs) return performance.now() - started - quietMs;
  }
  return performance.now() - started;
}

/** Bytes on disk under a directory. */
export function diskBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += diskBytes(p);
    else if (entry.isFile()) total += fs.statSync(p).blocks * 512;
  }
  return total;
}

/**
 * Spawns the server on `dataDir` and waits until GET /readyz answers 200. `entry` and `cwd` run another build (an A/B
 * against an older commit's worktree). Returns the handle with `readyMs`, the time
 * from spawn to the first 200. Throws (after killing the child) when it exits early or is not ready in time.
 */
export async function startServer({ dataDir, key, port, readyTimeoutMs = 120_000, env = {}, nodeArgs = [], entry = SERVER_ENTRY, cwd = ROOT }) {
  if (!fs.existsSync(entry)) {
    throw new Error(`${entry} not found: build first (npx tsc -p tsconfig.build.json)`);
  }
  port ??= await freePort();
  // The caller's other SERVICE_* settings pass through (e.g. SERVICE_EMBEDDER=hashed to compare embedders).
  const childEnv = { ...process.env };
  Object.assign(childEnv, {
    SERVICE_PORT: String(port),
    // Benchmarks measure the data plane; a console on 8080 would also clash between concurrent servers.
    SERVICE_CONSOLE_PORT: "0",
    SERVICE_HOST: HOST,
    SERVICE_DATA_DIR: dataDir,
    SERVICE_ADMIN_KEY: key,
    SERVICE_LOG_LEVEL: "silent",
    ...env,
  });
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, entry], { cwd, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let output = "";
  const keep = (chunk) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  child.once("exit", () => children.delete(child));

  const base = `http://${HOST}:${port}`;
  const server = {
    child,
    pid: child.pid,
    port,
    base,
    key,
    dataDir,
    readyMs: NaN,
    exited,
    output: () => output,
    rss: () => procMemory(child.pid, "VmRSS"),
    peakRss: () => procMemory(child.pid, "VmHWM"),
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: (timeoutMs) => stopServer(server, timeoutMs),
  };
  const deadline = started + readyTimeoutMs;
  let lastStatus = "no answer";
  while (performance.now() < deadline) {
    if (!server.alive()) {
      throw new Error(`server exited before ready (code ${child.exitCode}, signal ${child.signalCode}):\n${output}`);
    }
    try {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) });
      const body = await res.text();
      if (res.status === 200) {
        server.readyMs = performance.now() - started;
        return server;
      }
      lastStatus = `${res.status} ${body.slice(0, 200)}`;
    } catch {
      // not listening yet
    }
    await sleep(10);
  }
  child.kill("SIGKILL");
  throw new Error(`server not ready after ${readyTimeoutMs} ms (last /readyz: ${lastStatus}):\n${output}`);
}

/** SIGTERM, then SIGKILL if the server has not exited within `timeoutMs`. Resolves with the time it took. */
export async function stopServer(server, timeoutMs = 30_000) {
  const started = performance.now();
  if (!server.alive()) return 0;
  server.child.kill("SIGTERM");
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  const outcome = await Promise.race([server.exited, timeout]);
  clearTimeout(timer);
  if (outcome === "timeout") {
    server.child.kill("SIGKILL");
    await server.exited;
    process.stderr.write(`bench: server ${server.pid} ignored SIGTERM for ${timeoutMs} ms, killed\n`);
  }
  return performance.now() - started;
}
