// A NATS JetStream cluster of three servers on loopback for the clustered-mode benchmark, started as it is in
// test/harness/nats-cluster.ts: each server a child process with its own store directory, killed with the bench.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { adoptChild, cpuSeconds, freePort, sleep } from "./server.mjs";

const READY_TIMEOUT_MS = 30_000;

function natsServerPath() {
  const found = spawnSync("sh", ["-c", "command -v nats-server || ls /usr/sbin/nats-server /usr/bin/nats-server 2>/dev/null"], { encoding: "utf8" });
  const binary = found.stdout.split("\n").find((line) => line.trim() !== "")?.trim();
  if (binary === undefined) throw new Error("nats-server is not installed: `make nats-server` installs it (apt-get install nats-server)");
  return binary;
}

function version(binary) {
  return spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout.trim();
}

/**
 * Starts `size` servers under `root` and waits until every one reports the same JetStream meta leader. Returns
 * { urls, pids, version, stop }; `stop()` sends SIGTERM and, after 5 s, SIGKILL.
 */
export async function startNatsCluster(root, size = 3) {
  const binary = natsServerPath();
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), cluster: await freePort(), monitor: await freePort() });
  const children = ports.map((p, i) => {
    const routes = ports.filter((_, j) => j !== i).map((q) => `nats://127.0.0.1:${q.cluster}`);
    const dir = path.join(root, `nats${i}`);
    fs.mkdirSync(dir, { recursive: true });
    const args = ["-a", "127.0.0.1", "-p", String(p.client), "-m", String(p.monitor), "-js", "-sd", dir, "--server_name", `n${i}`, "--cluster_name", "engram", "--cluster", `nats://127.0.0.1:${p.cluster}`, "--routes", routes.join(",")];
    const child = spawn(binary, args, { stdio: "ignore" });
    adoptChild(child);
    return child;
  });
  const alive = (c) => c.exitCode === null && c.signalCode === null;
  const deadline = performance.now() + READY_TIMEOUT_MS;
  for (;;) {
    const dead = children.findIndex((c) => !alive(c));
    if (dead >= 0) throw new Error(`nats-server n${dead} exited (code ${children[dead].exitCode})`);
    const leaders = await Promise.all(
      ports.map(async (p) => {
        try {
          const res = await fetch(`http://127.0.0.1:${p.monitor}/jsz`, { signal: AbortSignal.timeout(1000) });
          return (await res.json()).meta_cluster?.leader ?? "";
        } catch {
          return "";
        }
      }),
    );
    if (leaders.every((l) => l !== "" && l === leaders[0])) break;
    if (performance.now() > deadline) throw new Error(`NATS cluster has no common JetStream leader: ${leaders.join(", ")}`);
    await sleep(100);
  }
  return {
    urls: ports.map((p) => `nats://127.0.0.1:${p.client}`),
    pids: children.map((c) => c.pid),
    version: version(binary),
    /** Messages and bytes of the streams (the command log and the shard map), from server 0's monitoring port. */
    async streamState() {
      try {
        const res = await fetch(`http://127.0.0.1:${ports[0].monitor}/jsz?streams=true`, { signal: AbortSignal.timeout(5000) });
        const body = await res.json();
        const streams = (body.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
        return Object.fromEntries(streams.map((s) => [s.name, { messages: s.state?.messages, bytes: s.state?.bytes }]));
      } catch {
        return undefined;
      }
    },
    cpuSeconds: () => children.reduce((sum, c) => sum + (cpuSeconds(c.pid) ?? 0), 0),
    async stop() {
      await Promise.all(
        children.filter(alive).map(
          (c) =>
            new Promise((resolve) => {
              const timer = setTimeout(() => c.kill("SIGKILL"), 5000);
              c.once("exit", () => {
                clearTimeout(timer);
                resolve();
              });
              c.kill("SIGTERM");
            }),
        ),
      );
    },
  };
}
