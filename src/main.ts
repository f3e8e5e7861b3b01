// Process entry point: read config, start Engram, shut down gracefully on SIGINT/SIGTERM (see Engram.close): exit 0
// once drained and closed, 1 if the shutdown fails, outlasts its bound, or a second signal says not to wait.
import { loadConfig } from "./platform/config.js";
import { startEngram } from "./app.js";

/**
 * What a shutdown may take beyond SERVICE_SHUTDOWN_GRACE_MS (the ingest job being applied, the vector graphs' save,
 * closing LMDB) before the process stops waiting. Exiting then loses nothing acknowledged: LMDB is durable at each
 * commit, and a job cut short is redone at the next start.
 */
const SHUTDOWN_TAIL_MS = 30_000;

export async function main(): Promise<void> {
  const config = loadConfig();
  const engram = await startEngram(config);
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      engram.logger.warn({ signal }, "second signal: exiting without waiting for the shutdown to finish");
      process.exit(1);
    }
    stopping = true;
    const started = Date.now();
    engram.logger.info({ signal, grace_ms: config.shutdownGraceMs }, "shutting down");
    const deadline = setTimeout(() => {
      engram.logger.error({ ms: Date.now() - started }, "shutdown did not finish in time; exiting");
      process.exit(1);
    }, config.shutdownGraceMs + SHUTDOWN_TAIL_MS);
    deadline.unref();
    engram.close().then(
      () => {
        engram.logger.info({ ms: Date.now() - started }, "shut down");
        process.exit(0);
      },
      (e: unknown) => {
        engram.logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
