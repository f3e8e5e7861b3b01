// A built Engram started inside the bench's own process (for benches that need its test hooks or a clock they
// control), on an ephemeral loopback port with a fresh data directory, and a JSON caller with its admin key.
import path from "node:path";
import { ROOT, tempDir } from "./server.mjs";

const { startEngram } = await import(path.join(ROOT, "dist/src/app.js"));
const { loadConfig } = await import(path.join(ROOT, "dist/src/platform/config.js"));
const { createLogger } = await import(path.join(ROOT, "dist/src/platform/logger.js"));
const { mintApiKey } = await import(path.join(ROOT, "dist/src/auth/api-key.js"));

/**
 * Starts a server with `env` added to the bench defaults (silent, no console) and `options` passed to startEngram
 * (e.g. `memoryNow`). `call(method, route, body)` answers parsed JSON (or text), throwing on a non-2xx answer.
 */
export async function startInProcess(name, env = {}, options = {}) {
  // Removed when the bench exits, as every bench's data (unless BENCH_KEEP_DATA=1): a 100k ingest leaves ~250 MB.
  const dataDir = tempDir(name);
  const adminKey = mintApiKey("local").key;
  const config = loadConfig({
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_PORT: "0",
    SERVICE_CONSOLE_PORT: "0",
    SERVICE_HOST: "127.0.0.1",
    SERVICE_DATA_DIR: dataDir,
    SERVICE_LOG_LEVEL: "silent",
    ...env,
  });
  const engram = await startEngram(config, { logger: createLogger("silent"), ...options });
  const base = `http://127.0.0.1:${engram.port}`;
  async function call(method, route, body) {
    const response = await fetch(`${base}${route}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${text.slice(0, 300)}`);
    return (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text;
  }
  return { engram, dataDir, adminKey, base, call, post: (route, body) => call("POST", route, body) };
}
