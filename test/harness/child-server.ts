// Runs the built server (dist/src/serve.js) as a child process, for kill -9 and start-up tests.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

import { clusteredEnv } from "./server.js";

const ENTRY = "dist/src/serve.js";

/** Latest modification time of the TypeScript sources under `dirs`. */
function newestSource(dirs: readonly string[]): number {
  let newest = 0;
  for (const dir of dirs) {
    if (!fs.existsSync(dir)) continue;
    for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && entry.name.endsWith(".ts")) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/** Builds the server when `make build` has not, or when a source changed since: a stale build tests old code. */
export function ensureBuilt(): void {
  if (fs.existsSync(ENTRY) && fs.statSync(ENTRY).mtimeMs >= newestSource(["src", "gen"])) return;
  const build = spawnSync("npx", ["tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
  if (build.status !== 0) throw new Error("build failed");
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface ChildServer {
  readonly process: ChildProcess;
  readonly baseUrl: string;
  stdout(): string;
  stderr(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

export async function startChild(env: Record<string, string>): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [ENTRY], {
    // No child binds the console's default port 8080 unless the caller asks for a console.
    env: { PATH: process.env["PATH"] ?? "", SERVICE_HOST: "127.0.0.1", SERVICE_PORT: String(port), SERVICE_CONSOLE_PORT: "0", ...(env["SERVICE_CLUSTER_NATS_URL"] === undefined ? clusteredEnv(env["SERVICE_DATA_DIR"] ?? "./data") : {}), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // Poll readiness: each attempt waits for the child's answer, so no fixed sleep decides the outcome.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`server exited: ${err}`);
    try {
      if ((await fetch(`${baseUrl}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (attempt > 600) {
      // A child left running would outlive the test (and hold its ports and store).
      child.kill("SIGKILL");
      throw new Error(`server did not become ready: ${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    process: child,
    baseUrl,
    stdout: () => out,
    stderr: () => err,
    async kill(signal) {
      child.kill(signal);
      await exited;
    },
  };
}
