// What a running server holds: memory and open files from /proc/<pid>, heap and handles from its /metrics.
import fs from "node:fs";
import { procMemory } from "./server.mjs";

const MIB = 2 ** 20;

/** Open file descriptors of a process (entries of /proc/<pid>/fd), or undefined when unreadable. */
export function openFds(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return undefined;
  }
}

/**
 * Memory of a process in MiB: resident in all (VmRSS), its anonymous part (RssAnon: heap, native allocations — where a
 * leak shows) and its file-backed part (RssFile: mapped files, here mostly LMDB's data file, which grows with the
 * pages the process has touched and is returned to the page cache under pressure).
 */
export function memoryMib(pid) {
  const mib = (field) => {
    const bytes = procMemory(pid, field);
    return bytes === undefined ? undefined : bytes / MIB;
  };
  return { rss: mib("VmRSS"), rss_anon: mib("RssAnon"), rss_file: mib("RssFile") };
}

/**
 * The unlabelled samples of a Prometheus text exposition (`name value` lines), by name; labelled series are left out
 * except through their `_total` sums, which prom-client exports unlabelled.
 */
export async function scrapeMetrics(server, timeoutMs = 5000) {
  const res = await fetch(`${server.base}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  const values = {};
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*) (\S+)$/.exec(line);
    if (m) values[m[1]] = Number(m[2]);
  }
  return values;
}

/** One reading of what the server holds: memory (MiB), fds, and from /metrics heap (MiB), handles, event-loop lag. */
export async function serverHolds(server) {
  const metrics = await scrapeMetrics(server).catch(() => ({}));
  const mib = (v) => (v === undefined ? undefined : v / MIB);
  return {
    ...memoryMib(server.pid),
    fds: openFds(server.pid),
    heap_used: mib(metrics.nodejs_heap_size_used_bytes),
    heap_total: mib(metrics.nodejs_heap_size_total_bytes),
    external: mib(metrics.nodejs_external_memory_bytes),
    active_handles: metrics.nodejs_active_handles_total,
    active_resources: metrics.nodejs_active_resources_total,
    eventloop_lag_p99_ms: metrics.nodejs_eventloop_lag_p99_seconds === undefined ? undefined : metrics.nodejs_eventloop_lag_p99_seconds * 1000,
  };
}
