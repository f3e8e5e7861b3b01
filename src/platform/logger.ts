// Builds the pino logger. Secrets are redacted by path so that no log line can carry one.
import { pino, type DestinationStream, type Logger } from "pino";

export type { Logger };

/** Paths that may hold a key or secret anywhere Engram logs an object. */
const REDACTED_PATHS = [
  "authorization",
  "headers.authorization",
  "req.headers.authorization",
  "api_key",
  "apiKey",
  "secret",
  "*.api_key",
  "*.apiKey",
  "*.secret",
  "*.authorization",
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "engram" },
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
