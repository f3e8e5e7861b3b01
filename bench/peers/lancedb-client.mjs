// The LanceDB side as run.mjs drives it: lancedb-side.mjs in a child process (which dies with the bench), one size at
// a time in the same order of phases as the Engram side, with memory and start-up read from outside the child.
import { fork } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { round } from "../lib/api.mjs";
import { memoryMib } from "../lib/process-stats.mjs";
import { diskBytes, procMemory, removeDir, tempDir } from "../lib/server.mjs";

const ENTRY = path.join(path.dirname(fileURLToPath(import.meta.url)), "lancedb-side.mjs");
const live = new Set();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
});

/**
 * A fresh LanceDB process. Resolves once its modules are loaded, with `startedAt` (when it was spawned), `call(command,
 * args)`, `rssMib()` (VmRSS of the child, MiB) and `stop()`.
 */
export async function lancedbProcess() {
  const startedAt = performance.now();
  // LANCEDB_LOG=error: its Rust log otherwise warns on every query that selects columns (a deprecation notice).
  const child = fork(ENTRY, [], { execArgv: ["--expose-gc"], env: { ...process.env, LANCEDB_LOG: "error" }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  live.add(child);
  const pending = new Map();
  let nextId = 0;
  let exitError;
  const exited = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      exitError = new Error(`lancedb process exited (code ${code}, signal ${signal})`);
      for (const { reject } of pending.values()) reject(exitError);
      pending.clear();
      resolve();
    }),
  );
  const ready = new Promise((resolve, reject) => {
    pending.set("ready", { resolve, reject });
  });
  child.on("message", (msg) => {
    if (msg.ready) {
      pending.get("ready")?.resolve();
      pending.delete("ready");
      return;
    }
    const waiter = pending.get(msg.id);
    if (!waiter) return;
    pending.delete(msg.id);
    if (msg.ok) waiter.resolve(msg.value);
    else waiter.reject(new Error(`lancedb side: ${msg.error}`));
  });
  await ready;
  return {
    pid: child.pid,
    startedAt,
    call(command, args) {
      if (exitError) return Promise.reject(exitError);
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        child.send({ id, command, args });
      });
    },
    rssMib: () => memoryMib(child.pid).rss,
    async stop() {
      if (!exitError) child.disconnect();
      await exited;
    },
  };
}

/**
 * One size on LanceDB: a fresh process and table loaded with the size's corpus (`shared`: with the shared vectors),
 * query series with 1 and `concurrency` clients, memory added by the load (the child's VmRSS after the ingest, and
 * after the queries, minus before the ingest, workload and embedder already in memory), disk use and, unless `restart` is false, start-up to
 * ready on the data left (a fresh process opens the table and answers one hybrid query).
 */
export async function lancedbSize({ n, queries, digest, concurrency, shared = false, restart = true }) {
  const dir = tempDir(`peers-lance-n${n}`);
  const out = {};
  try {
    const lance = await lancedbProcess();
    try {
      out.setup = await lance.call("setup", { n, queries: queries.length, dir, shared });
      if (out.setup.digest !== digest) throw new Error(`the LanceDB process built another corpus (${out.setup.digest} ≠ ${digest})`);
      out.ingest = await lance.call("ingest");
      const rssBefore = out.ingest.rss_mib_before;
      const rssLoaded = lance.rssMib();
      out.query_1 = await lance.call("query", { clients: 1 });
      out.query_concurrent = await lance.call("query", { clients: concurrency });
      const rssAfter = lance.rssMib();
      out.memory = {
        rss_mib_before: round(rssBefore),
        rss_mib_loaded: round(rssLoaded),
        rss_mib_after_queries: round(rssAfter),
        peak_rss_mib: round(procMemory(lance.pid, "VmHWM") / 2 ** 20),
        added_mib: round(rssLoaded - rssBefore),
      added_after_queries_mib: round(rssAfter - rssBefore),
      };
    } finally {
      await lance.stop();
    }
    out.disk_mib = round(diskBytes(dir) / 2 ** 20);
    if (restart) {
      const fresh = await lancedbProcess();
      try {
        const opened = await fresh.call("open", { dir, text: queries[0] });
        out.startup = { ready_ms: round(performance.now() - fresh.startedAt), rss_mib_at_ready: round(fresh.rssMib()), ...opened };
      } finally {
        await fresh.stop();
      }
    }
    return out;
  } finally {
    removeDir(dir);
  }
}

/** LoCoMo recall@10 of LanceDB hybrid search (see lancedb-side.mjs). */
export async function lancedbRecall() {
  const dir = tempDir("peers-lance-locomo");
  const lance = await lancedbProcess();
  try {
    return await lance.call("recall", { dir });
  } finally {
    await lance.stop();
    removeDir(dir);
  }
}
