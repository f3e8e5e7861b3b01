// Reads every SERVICE_* environment variable once, validates it, and hands out a frozen Config.
// Nothing else in Engram reads process.env.
import { parseTrustPolicy, type TrustPolicy } from "../storage/provenance.js";
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
  /** HTTP/1.1 request headers (and a connection's first bytes, on any protocol) must arrive within this, in ms. */
  readonly headersTimeoutMs: number;
  /** A whole HTTP/1.1 request (headers and body) must arrive within this, in ms. */
  readonly requestTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection or an HTTP/2 session with no request in progress closes after this, in ms. */
  readonly idleTimeoutMs: number;
  /** The embedded default embedder, used when no embeddings endpoint is configured. */
  readonly embedder: "wordvec" | "hashed";
  /** An OpenAI-compatible embeddings endpoint; replaces the embedded embedder when set. */
  readonly embeddings: EmbeddingsConfig | undefined;
  /** An OpenAI-compatible chat endpoint that synthesises answers; answers are built without an LLM when unset. */
  readonly llm: ProviderConfig | undefined;
  /** The trust each provenance origin gets unless a write states it (SERVICE_TRUST_POLICY, e.g. `tool=untrusted`). */
  readonly trustPolicy: TrustPolicy;
  /** Near-duplicate facts of one scope are merged as they are written (SERVICE_CONSOLIDATION, default on). */
  readonly consolidation: boolean;
  /**
   * At start-up, a background pass checks the facts stored before for near-duplicates (SERVICE_CONSOLIDATION_SWEEP,
   * default off: stores written with consolidation on need none).
   */
  readonly consolidationSweep: boolean;
  /** Opens POST /v2/core/search and the direct-bypass query mode. */
  readonly coreEnableDirectSearch: boolean;
  /** Opens the three /v2/core/pubsub routes. */
  readonly coreEnableDirectPubsub: boolean;
  /** Open subscriptions one API key may hold, counted apart for core pubsub and for control events. */
  readonly maxSubscriptionsPerKey: number;
  /** Open subscriptions of all keys together, counted apart for core pubsub and for control events. */
  readonly maxSubscriptions: number;
  /** Opens every other external /v2/core route. */
  readonly coreAllowAll: boolean;
  /** Routes opened one by one: `METHOD /path` or `/path`, `:param` segments, a trailing `*` for a prefix. */
  readonly coreAllowedRoutes: readonly string[];
  /** How often expired entries are purged in the background (SERVICE_RETENTION_SWEEP_MS; 0: only on demand). */
  readonly retentionSweepMs: number;
  /** An agent whose last heartbeat is this old reads `idle` (SERVICE_AGENT_IDLE_AFTER_MS). */
  readonly agentIdleAfterMs: number;
  /** An agent whose last heartbeat is this old reads `gone` (SERVICE_AGENT_GONE_AFTER_MS). */
  readonly agentGoneAfterMs: number;
  /** The web console's own port, on `host` (SERVICE_CONSOLE_PORT); 0 disables the console. */
  readonly consolePort: number;
  /** A console session unused for this long ends (SERVICE_CONSOLE_SESSION_IDLE_MS). */
  readonly consoleSessionIdleMs: number;
  /** A console session ends this long after sign-in, however busy (SERVICE_CONSOLE_SESSION_MAX_MS). */
  readonly consoleSessionMaxMs: number;
  /** Console sessions held at once; signing in beyond it ends the least recently used (SERVICE_CONSOLE_MAX_SESSIONS). */
  readonly consoleMaxSessions: number;
  /** The built console (SERVICE_CONSOLE_ASSETS_DIR); undefined means dist/console of the package. */
  readonly consoleAssetsDir: string | undefined;
  /** After SIGTERM, requests in progress may finish within this before their connections are cut (SERVICE_SHUTDOWN_GRACE_MS). */
  readonly shutdownGraceMs: number;
  /**
   * Bytes of LMDB pages the store may hold (SERVICE_MAX_STORE_BYTES); a write past it is refused with 507 /
   * RESOURCE_EXHAUSTED. Undefined: unbounded.
   */
  readonly maxStoreBytes: number | undefined;
  /** Per-API-key token buckets (SERVICE_RATE_LIMIT_*); undefined: no rate limit. */
  readonly rateLimit: RateLimitConfig | undefined;
  /** Clustered mode (SERVICE_CLUSTER_*): set by SERVICE_CLUSTER_NATS_URL; undefined: standalone. */
  readonly cluster: ClusterConfig | undefined;
}

/** One node of a cluster whose replicated log is a NATS JetStream stream (src/cluster). */
export interface ClusterConfig {
  /** NATS servers of the JetStream cluster (SERVICE_CLUSTER_NATS_URL, comma-separated). */
  readonly natsUrls: readonly string[];
  /**
   * Names the cluster's streams and buckets in NATS (SERVICE_CLUSTER_NAME): `<name>_LOG`, `<name>_EVENTS`,
   * `<name>-shard-map`, `<name>-snapshots` (lower case), so that several clusters may share one NATS cluster.
   */
  readonly name: string;
  /** This node's name in the shard map (SERVICE_CLUSTER_NODE_ID). */
  readonly nodeId: string;
  /** Tenant shards of the cluster, 1..shardCount (SERVICE_CLUSTER_SHARD_COUNT); every node must agree on it. */
  readonly shardCount: number;
  /** The tenant shards this node holds and serves (SERVICE_CLUSTER_SHARDS, e.g. `1,2`; default: all). */
  readonly servedShards: readonly number[];
  /** The URL other nodes forward calls for this node's shards to (SERVICE_CLUSTER_ADVERTISE_URL). */
  readonly advertiseUrl: string;
  /** A read carrying a consistency token waits at most this long for this node to apply it (SERVICE_CLUSTER_READ_WAIT_MS). */
  readonly readWaitMs: number;
  /** JetStream replicas of the log (SERVICE_CLUSTER_REPLICAS): 3 survives the loss of one NATS server. */
  readonly replicas: number;
  /**
   * How often a node records its progress and, when its turn, snapshots its shards and trims the log behind the
   * snapshots (SERVICE_CLUSTER_SNAPSHOT_INTERVAL_MS); 0: never, the log keeps every command.
   */
  readonly snapshotIntervalMs: number;
  /**
   * A node not heard in the shard map for this long is taken for gone (SERVICE_CLUSTER_NODE_TIMEOUT_MS): calls are no
   * longer forwarded to it, and the other nodes of its shards take over its unfinished ingest jobs and run purges.
   * Each node refreshes its announcement four times per timeout.
   */
  readonly nodeTimeoutMs: number;
}

/** Each API key's token bucket: `burst` calls at once, refilled at `perSecond` calls a second. */
export interface RateLimitConfig {
  readonly perSecond: number;
  readonly burst: number;
  /** Whether admin keys are limited too (SERVICE_RATE_LIMIT_ADMIN); by default they are not. */
  readonly limitAdmin: boolean;
}

export interface ProviderConfig {
  readonly url: string;
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
}

/** The embeddings endpoint, and how often a transient failure (network, timeout, 408, 429, 5xx) is retried. */
export interface EmbeddingsConfig extends ProviderConfig {
  /** Retries after the first attempt; 0 never retries. */
  readonly maxRetries: number;
  /** First backoff in ms, doubled on each retry, with jitter. */
  readonly retryBaseMs: number;
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

function embeddingsProvider(env: Env): EmbeddingsConfig | undefined {
  const base = provider(env, "SERVICE_EMBEDDINGS", "text-embedding-3-small");
  if (base === undefined) return undefined;
  return {
    ...base,
    maxRetries: integer(env, "SERVICE_EMBEDDINGS_MAX_RETRIES", 3, 0, 10),
    retryBaseMs: integer(env, "SERVICE_EMBEDDINGS_RETRY_BASE_MS", 500, 1, 60_000),
  };
}

const LOG_LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);
const INSTANCE_TAG = /^[A-Za-z0-9]{1,32}$/;

function embedderName(value: string): "wordvec" | "hashed" {
  if (value === "wordvec" || value === "hashed") return value;
  throw new ConfigError(`SERVICE_EMBEDDER must be "wordvec" or "hashed", got "${value}"`);
}

function connectionTimeouts(env: Env): Pick<Config, "headersTimeoutMs" | "requestTimeoutMs" | "idleTimeoutMs"> {
  const headersTimeoutMs = integer(env, "SERVICE_HEADERS_TIMEOUT_MS", 10_000, 50, 600_000);
  const requestTimeoutMs = integer(env, "SERVICE_REQUEST_TIMEOUT_MS", 300_000, 50, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout.
  if (requestTimeoutMs < headersTimeoutMs) {
    throw new ConfigError("SERVICE_REQUEST_TIMEOUT_MS must not be less than SERVICE_HEADERS_TIMEOUT_MS");
  }
  return { headersTimeoutMs, requestTimeoutMs, idleTimeoutMs: integer(env, "SERVICE_IDLE_TIMEOUT_MS", 65_000, 50, 3_600_000) };
}

type ConsoleConfig = Pick<Config, "consolePort" | "consoleSessionIdleMs" | "consoleSessionMaxMs" | "consoleMaxSessions" | "consoleAssetsDir">;

function consoleConfig(env: Env, port: number): ConsoleConfig {
  const consolePort = integer(env, "SERVICE_CONSOLE_PORT", 8080, 0, 65535);
  // Port 0 for the data plane means "any free port", which never collides; equal fixed ports always would.
  if (consolePort !== 0 && consolePort === port) throw new ConfigError("SERVICE_CONSOLE_PORT must differ from SERVICE_PORT");
  const assetsDir = env["SERVICE_CONSOLE_ASSETS_DIR"]?.trim();
  return {
    consolePort,
    consoleSessionIdleMs: integer(env, "SERVICE_CONSOLE_SESSION_IDLE_MS", 1_800_000, 1000, 2_592_000_000),
    consoleSessionMaxMs: integer(env, "SERVICE_CONSOLE_SESSION_MAX_MS", 43_200_000, 1000, 2_592_000_000),
    consoleMaxSessions: integer(env, "SERVICE_CONSOLE_MAX_SESSIONS", 1000, 1, 1_000_000),
    consoleAssetsDir: assetsDir === undefined || assetsDir === "" ? undefined : path.resolve(assetsDir),
  };
}

/** SERVICE_MAX_STORE_BYTES: unset or empty means unbounded; at least 1 MiB, since a store starts with some pages. */
function maxStoreBytes(env: Env): number | undefined {
  const raw = env["SERVICE_MAX_STORE_BYTES"];
  if (raw === undefined || raw.trim() === "") return undefined;
  return integer(env, "SERVICE_MAX_STORE_BYTES", 0, 1024 * 1024, Number.MAX_SAFE_INTEGER);
}

const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function clusterConfig(env: Env, port: number): ClusterConfig | undefined {
  const natsUrls = (env["SERVICE_CLUSTER_NATS_URL"] ?? "").split(",").map((u) => u.trim()).filter((u) => u !== "");
  if (natsUrls.length === 0) return undefined;
  for (const url of natsUrls) if (!/^(nats|tls):\/\/[^\s]+$/.test(url)) throw new ConfigError(`SERVICE_CLUSTER_NATS_URL must list nats:// URLs, got "${url}"`);
  const name = text(env, "SERVICE_CLUSTER_NAME", "ENGRAM");
  if (!/^[A-Z0-9_]{1,32}$/.test(name)) throw new ConfigError("SERVICE_CLUSTER_NAME must be 1-32 upper-case letters, digits or '_'");
  const nodeId = text(env, "SERVICE_CLUSTER_NODE_ID", "");
  if (!NODE_ID.test(nodeId)) throw new ConfigError("SERVICE_CLUSTER_NODE_ID must be 1-64 letters, digits, '-' or '_' (each node its own)");
  const shardCount = integer(env, "SERVICE_CLUSTER_SHARD_COUNT", 8, 1, 4096);
  const listed = (env["SERVICE_CLUSTER_SHARDS"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const servedShards = listed.length === 0 ? Array.from({ length: shardCount }, (_, i) => i + 1) : listed.map(Number);
  for (const [i, shard] of servedShards.entries()) {
    if (!Number.isInteger(shard) || shard < 1 || shard > shardCount) throw new ConfigError(`SERVICE_CLUSTER_SHARDS must list shards in [1, ${shardCount}], got "${listed[i]}"`);
  }
  const advertiseUrl = text(env, "SERVICE_CLUSTER_ADVERTISE_URL", `http://127.0.0.1:${port}`);
  if (!/^https?:\/\/[^\s/]+$/.test(advertiseUrl)) throw new ConfigError(`SERVICE_CLUSTER_ADVERTISE_URL must be http(s)://host:port, got "${advertiseUrl}"`);
  return Object.freeze({
    natsUrls: Object.freeze(natsUrls),
    name,
    nodeId,
    shardCount,
    servedShards: Object.freeze([...new Set(servedShards)].sort((a, b) => a - b)),
    advertiseUrl,
    readWaitMs: integer(env, "SERVICE_CLUSTER_READ_WAIT_MS", 5_000, 0, 600_000),
    replicas: integer(env, "SERVICE_CLUSTER_REPLICAS", 3, 1, 5),
    snapshotIntervalMs: integer(env, "SERVICE_CLUSTER_SNAPSHOT_INTERVAL_MS", 600_000, 0, 86_400_000),
    nodeTimeoutMs: integer(env, "SERVICE_CLUSTER_NODE_TIMEOUT_MS", 10_000, 1_000, 600_000),
  });
}

function rateLimitConfig(env: Env): RateLimitConfig | undefined {
  const perSecond = integer(env, "SERVICE_RATE_LIMIT_PER_SECOND", 0, 0, 1_000_000);
  const burst = integer(env, "SERVICE_RATE_LIMIT_BURST", Math.max(1, perSecond), 1, 1_000_000);
  const limitAdmin = bool(env, "SERVICE_RATE_LIMIT_ADMIN");
  return perSecond === 0 ? undefined : Object.freeze({ perSecond, burst, limitAdmin });
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
  const port = integer(env, "SERVICE_PORT", 3000, 0, 65535);
  return Object.freeze({
    port,
    host: text(env, "SERVICE_HOST", "0.0.0.0"),
    dataDir: path.resolve(text(env, "SERVICE_DATA_DIR", "./data")),
    instanceTag,
    adminKey,
    logLevel,
    maxRequestBytes: integer(env, "SERVICE_MAX_REQUEST_BYTES", 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    ...connectionTimeouts(env),
    embedder: embedderName(text(env, "SERVICE_EMBEDDER", "wordvec")),
    embeddings: embeddingsProvider(env),
    llm: provider(env, "SERVICE_LLM", "gpt-4o-mini"),
    trustPolicy: trustPolicy(env),
    consolidation: (env["SERVICE_CONSOLIDATION"] ?? "").trim() === "" || bool(env, "SERVICE_CONSOLIDATION"),
    consolidationSweep: bool(env, "SERVICE_CONSOLIDATION_SWEEP"),
    coreEnableDirectSearch: bool(env, "SERVICE_CORE_ENABLE_DIRECT_SEARCH"),
    coreEnableDirectPubsub: bool(env, "SERVICE_CORE_ENABLE_DIRECT_PUBSUB"),
    maxSubscriptionsPerKey: integer(env, "SERVICE_MAX_SUBSCRIPTIONS_PER_KEY", 64, 1, 1_000_000),
    maxSubscriptions: integer(env, "SERVICE_MAX_SUBSCRIPTIONS", 4096, 1, 1_000_000),
    coreAllowAll: bool(env, "SERVICE_CORE_ALLOW_ALL"),
    retentionSweepMs: integer(env, "SERVICE_RETENTION_SWEEP_MS", 60_000, 0, 86_400_000),
    agentIdleAfterMs: integer(env, "SERVICE_AGENT_IDLE_AFTER_MS", 120_000, 0, 86_400_000),
    agentGoneAfterMs: integer(env, "SERVICE_AGENT_GONE_AFTER_MS", 1_800_000, 0, 2_592_000_000),
    ...consoleConfig(env, port),
    shutdownGraceMs: integer(env, "SERVICE_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    maxStoreBytes: maxStoreBytes(env),
    rateLimit: rateLimitConfig(env),
    cluster: clusterConfig(env, port),
    coreAllowedRoutes: Object.freeze(
      (env["SERVICE_CORE_ALLOWED_ROUTES"] ?? "")
        .split(",")
        .map((r) => r.trim())
        .filter((r) => r !== ""),
    ),
  });
}

function trustPolicy(env: Env): TrustPolicy {
  const policy = parseTrustPolicy(env["SERVICE_TRUST_POLICY"] ?? "");
  if (typeof policy === "string") throw new ConfigError(policy);
  return policy;
}
