// Describes the machine and the code a benchmark ran on, for the results files.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT, SERVER_ENTRY, cpuSeconds, liveChildPids, sleep } from "./server.mjs";

function git(args) {
  try {
    return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return undefined;
  }
}

export function machine() {
  const cpuinfo = fs.existsSync("/proc/cpuinfo") ? fs.readFileSync("/proc/cpuinfo", "utf8") : "";
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  return {
    cpus: os.availableParallelism(),
    cpu_model: model,
    memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    commit: git(["rev-parse", "--short", "HEAD"]),
    server_entry: path.relative(ROOT, SERVER_ENTRY),
    worktree_dirty: (git(["status", "--porcelain", "--", "src", "proto", "gen"]) ?? "") !== "",
    date: new Date().toISOString(),
  };
}

export function writeResults(name, results) {
  const dir = path.join(ROOT, "bench/results");
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}

/** Busy and total CPU seconds of the whole machine since boot, from /proc/stat. */
function systemCpu() {
  try {
    const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0];
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = v[3] + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: (total - idle) / 100, total: total / 100 };
  } catch {
    return undefined;
  }
}

function ownCpu() {
  const self = process.cpuUsage();
  return (self.user + self.system) / 1e6 + liveChildPids().reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
}

/**
 * Samples, four times a second, how much CPU other processes (not this bench, not its servers) use: on a shared
 * 2-core machine that is what makes figures unreliable. `stop()` returns their share of all cores over the whole
 * window and the peak share of any one second.
 */
export function interferenceMonitor() {
  let others = 0;
  let total = 0;
  const window = [];
  let peak = 0;
  let last = { sys: systemCpu(), own: ownCpu() };
  const sample = () => {
    const sys = systemCpu();
    const own = ownCpu();
    if (sys && last.sys && sys.total > last.sys.total) {
      const busy = Math.max(0, sys.busy - last.sys.busy - Math.max(0, own - last.own));
      const span = sys.total - last.sys.total;
      others += busy;
      total += span;
      window.push([busy, span]);
      if (window.length > 4) window.shift();
      if (window.length === 4) peak = Math.max(peak, window.reduce((a, [x]) => a + x, 0) / window.reduce((a, [, y]) => a + y, 0));
    }
    last = { sys, own };
  };
  const started = performance.now();
  const timer = setInterval(sample, 250);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const share = total > 0 ? Math.min(1, others / total) : 0;
      if (window.length < 4) peak = Math.max(peak, share);
      return {
        other_processes_cpu_share_mean: Math.round(share * 1000) / 1000,
        other_processes_cpu_share_peak: Math.round(peak * 1000) / 1000,
        seconds: Math.round(performance.now() - started) / 1000,
      };
    },
  };
}

/**
 * Waits (at most `timeoutMs`) until the machine is quiet: other processes' CPU under 10 % of all cores over 2 s.
 * Resolves with { waited_ms, quiet }.
 */
export async function waitQuietMachine(timeoutMs) {
  const started = performance.now();
  for (;;) {
    const a = { sys: systemCpu(), own: ownCpu() };
    await sleep(2000);
    const b = { sys: systemCpu(), own: ownCpu() };
    if (!a.sys || !b.sys) return { waited_ms: 0, quiet: undefined };
    const others = Math.max(0, b.sys.busy - a.sys.busy - Math.max(0, b.own - a.own)) / (b.sys.total - a.sys.total);
    if (others < 0.1) return { waited_ms: Math.round(performance.now() - started), quiet: true };
    if (performance.now() - started > timeoutMs) return { waited_ms: Math.round(performance.now() - started), quiet: false, other_share: others };
  }
}
