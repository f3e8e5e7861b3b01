// Starts a real Engram server on an ephemeral loopback port with its own data directory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEngram, type Engram } from "../../src/app.js";
import { loadConfig } from "../../src/platform/config.js";
import { createLogger } from "../../src/platform/logger.js";

export interface TestServer {
  readonly engram: Engram;
  readonly port: number;
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly adminKey: string;
  close(): Promise<void>;
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "engram-test-"));
}

export async function startTestServer(env: Record<string, string> = {}, dataDir = tempDataDir()): Promise<TestServer> {
  const config = loadConfig({
    SERVICE_PORT: "0",
    SERVICE_HOST: "127.0.0.1",
    SERVICE_DATA_DIR: dataDir,
    SERVICE_LOG_LEVEL: "silent",
    ...env,
  });
  const engram = await startEngram(config, { logger: createLogger("silent") });
  const adminKey = env["SERVICE_ADMIN_KEY"] ?? fs.readFileSync(path.join(dataDir, "admin.key"), "utf8").trim();
  return {
    engram,
    port: engram.port,
    baseUrl: `http://127.0.0.1:${engram.port}`,
    dataDir,
    adminKey,
    close: () => engram.close(),
  };
}
