// Process entry point: read config, start Engram, stop cleanly on SIGINT/SIGTERM.
import { loadConfig } from "./platform/config.js";
import { startEngram } from "./app.js";

export async function main(): Promise<void> {
  const config = loadConfig();
  const engram = await startEngram(config);
  const stop = (signal: string): void => {
    engram.logger.info({ signal }, "shutting down");
    engram.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}
