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
  /** The embedded default embedder, used when no embeddings endpoint is configured. */
  readonly embedder: "wordvec" | "hashed";
  /** An OpenAI-compatible embeddings endpoint; replaces the embedded embedder when set. */
  readonly embeddings: ProviderConfig | undefined;
  /** An OpenAI-compatible chat endpoint that synthesises answers; answers are built without an LLM when unset. */
  readonly llm: ProviderConfig | undefined;
  /** Opens POST /v2/core/search and the direct-bypass query mode. */
  readonly coreEnableDirectSearch: boolean;
  /** Opens the three /v2/core/pubsub routes. */
  readonly coreEnableDirectPubsub: boolean;
  /** Opens every other external /v2/core route. */
  readonly coreAllowAll: boolean;
  /** Routes opened one by one: `METHOD /path` or `/path`, `:param` segments, a trailing `*` for a prefix. */
  readonly coreAllowedRoutes: readonly string[];
}

export interface ProviderConfig {
  readonly url: string;
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
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

function bool(env: Env, name: string): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return false;
  if (["1", "true", "yes", "on"].includes(raw)) return true;
  if (["0", "false", "no", "off"].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function provider(env: Env, prefix: string, defaultModel: string): ProviderConfig | undefined {
  const url = env[`${prefix}_URL`]?.trim();
  if (url === undefined || url === "") return undefined;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("not http");
  } catch {
    throw new ConfigError(`${prefix}_URL must be an http(s) URL`);
  }
  return {
    url,
    model: text(env, `${prefix}_MODEL`, defaultModel),
    apiKey: env[`${prefix}_API_KEY`]?.trim() || undefined,
    timeoutMs: integer(env, `${prefix}_TIMEOUT_MS`, 30_000, 100, 600_000),
  };
}

const LOG_LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);
const INSTANCE_TAG = /^[A-Za-z0-9]{1,32}$/;

function embedderName(value: string): "wordvec" | "hashed" {
  if (value === "wordvec" || value === "hashed") return value;
  throw new ConfigError(`SERVICE_EMBEDDER must be "wordvec" or "hashed", got "${value}"`);
}

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
    embedder: embedderName(text(env, "SERVICE_EMBEDDER", "wordvec")),
    embeddings: provider(env, "SERVICE_EMBEDDINGS", "text-embedding-3-small"),
    llm: provider(env, "SERVICE_LLM", "gpt-4o-mini"),
    coreEnableDirectSearch: bool(env, "SERVICE_CORE_ENABLE_DIRECT_SEARCH"),
    coreEnableDirectPubsub: bool(env, "SERVICE_CORE_ENABLE_DIRECT_PUBSUB"),
    coreAllowAll: bool(env, "SERVICE_CORE_ALLOW_ALL"),
    coreAllowedRoutes: Object.freeze(
      (env["SERVICE_CORE_ALLOWED_ROUTES"] ?? "")
        .split(",")
        .map((r) => r.trim())
        .filter((r) => r !== ""),
    ),
  });
}
