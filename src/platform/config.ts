// Reads every SERVICE_* environment variable once, validates it, and hands out a frozen Config.
// Nothing else in Engram reads process.env.
import path from "node:path";

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly instanceTag: string;
  /** A well-formed key accepted as the admin's; undefined means bootstrap one on first start. */
  readonly adminKey: string | undefined;
  readonly logLevel: string;
  /** Largest HTTP/JSON or RPC request body accepted, in bytes. */
  readonly maxRequestBytes: number;
}

export class ConfigError extends Error {}

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer in [${min}, ${max}], got "${raw}"`);
  }
  return value;
}

function text(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  return raw === undefined || raw.trim() === "" ? fallback : raw.trim();
}

const LOG_LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);
const INSTANCE_TAG = /^[A-Za-z0-9]{1,32}$/;

export function loadConfig(env: Env = process.env): Config {
  const instanceTag = text(env, "SERVICE_INSTANCE_TAG", "local");
  if (!INSTANCE_TAG.test(instanceTag)) {
    throw new ConfigError("SERVICE_INSTANCE_TAG must be 1-32 letters or digits (no underscores)");
  }
  const logLevel = text(env, "SERVICE_LOG_LEVEL", "info");
  if (!LOG_LEVELS.has(logLevel)) {
    throw new ConfigError(`SERVICE_LOG_LEVEL must be one of ${[...LOG_LEVELS].join(", ")}`);
  }
  const adminKey = env["SERVICE_ADMIN_KEY"]?.trim() || undefined;
  return Object.freeze({
    port: integer(env, "SERVICE_PORT", 3000, 0, 65535),
    host: text(env, "SERVICE_HOST", "0.0.0.0"),
    dataDir: path.resolve(text(env, "SERVICE_DATA_DIR", "./data")),
    instanceTag,
    adminKey,
    logLevel,
    maxRequestBytes: integer(env, "SERVICE_MAX_REQUEST_BYTES", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  });
}
