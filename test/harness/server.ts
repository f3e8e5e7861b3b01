// Starts a real Engram server on an ephemeral loopback port with its own data directory.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startEngram, type Engram, type StartOptions } from "../../src/app.js";
import { loadConfig } from "../../src/platform/config.js";
import { createLogger } from "../../src/platform/logger.js";
import { mintApiKey } from "../../src/auth/api-key.js";

export interface TestServer {
  readonly engram: Engram;
  readonly port: number;
  readonly baseUrl: string;
  readonly dataDir: string;
  readonly adminKey: string;
  close(): Promise<void>;
}

/**
 * `make test-cluster` runs the whole suite against clustered servers: each test server is then a one-node cluster of
 * its own (its own streams and buckets, named after its data directory, so that a restarted server finds its log) on
 * the NATS server named by ENGRAM_TEST_NATS_URL.
 */
/** Whether test servers run clustered (make test-cluster). */
export function clusteredRun(): boolean {
  return (process.env["ENGRAM_TEST_NATS_URL"] ?? "") !== "";
}

export function clusteredEnv(dataDir: string): Record<string, string> {
  const nats = process.env["ENGRAM_TEST_NATS_URL"];
  if (nats === undefined || nats === "") return {};
  const name = `T${createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 16).toUpperCase()}`;
  return {
    SERVICE_CLUSTER_NATS_URL: nats,
    SERVICE_CLUSTER_NAME: name,
    SERVICE_CLUSTER_NODE_ID: name.toLowerCase(),
    SERVICE_CLUSTER_SHARD_COUNT: "3",
    SERVICE_CLUSTER_REPLICAS: "1",
  };
}

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "engram-test-"));
}

/**
 * Starts a server with a fresh SERVICE_ADMIN_KEY unless the caller passes one, or passes "" to exercise the
 * first-start bootstrap that writes admin.key.
 */
export async function startTestServer(env: Record<string, string> = {}, dataDir = tempDataDir(), options: StartOptions = {}): Promise<TestServer> {
  const config = loadConfig({
    SERVICE_ADMIN_KEY: mintApiKey(env["SERVICE_INSTANCE_TAG"] ?? "local").key,
    SERVICE_PORT: "0",
    SERVICE_HOST: "127.0.0.1",
    SERVICE_DATA_DIR: dataDir,
    SERVICE_LOG_LEVEL: "silent",
    // No test binds the console's default port 8080 unless it asks for a console.
    SERVICE_CONSOLE_PORT: "0",
    // A test that builds its own cluster keeps it.
    ...(env["SERVICE_CLUSTER_NATS_URL"] === undefined ? clusteredEnv(env["SERVICE_DATA_DIR"] ?? dataDir) : {}),
    ...env,
  });
  const engram = await startEngram(config, { logger: createLogger(process.env["ENGRAM_TEST_LOG"] ?? "silent"), ...options });
  const adminKey = config.adminKey ?? fs.readFileSync(path.join(dataDir, "admin.key"), "utf8").trim();
  return {
    engram,
    port: engram.port,
    baseUrl: `http://127.0.0.1:${engram.port}`,
    dataDir,
    adminKey,
    close: () => engram.close(),
  };
}
