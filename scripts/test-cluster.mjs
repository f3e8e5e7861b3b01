// `make test-cluster`: the whole test suite against clustered servers. One nats-server with JetStream runs for the
// suite on a free loopback port; every test server becomes a one-node cluster of its own on it (test/harness/server.ts
// clusteredEnv), so that each write goes through the replicated log, applying, tokens and the shard rules.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const binary = spawnSync("sh", ["-c", "command -v nats-server || ls /usr/sbin/nats-server"], { encoding: "utf8" }).stdout.trim().split("\n")[0];
if (!binary) throw new Error("nats-server is not installed (make nats-server)");
const port = await freePort();
const monitor = await freePort();
const store = fs.mkdtempSync(path.join(os.tmpdir(), "engram-test-nats-"));
// The suite's largest writes (1,000 items, a 1 MiB archive block) make commands over NATS's default 1 MiB.
const config = path.join(store, "nats.conf");
fs.writeFileSync(config, "max_payload: 8388608\n");
const server = spawn(binary, ["-c", config, "-a", "127.0.0.1", "-p", String(port), "-m", String(monitor), "-js", "-sd", store], { stdio: "ignore" });
let status = 1;
try {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`http://127.0.0.1:${monitor}/jsz`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (attempt > 300) throw new Error("nats-server did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const run = spawnSync(process.execPath, ["scripts/run-tests.mjs", ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, ENGRAM_TEST_NATS_URL: `nats://127.0.0.1:${port}` },
  });
  status = run.status ?? 1;
} finally {
  server.kill("SIGTERM");
  fs.rmSync(store, { recursive: true, force: true });
}
process.exit(status);
