// Client settings: explicit options first, then SERVICE_ENDPOINT, SERVICE_API_KEY and SERVICE_TRANSPORT.
// Besides src/platform/config.ts this is the only module that reads process.env, and only for absent options.
import type { Interceptor } from "@connectrpc/connect";

export type TransportKind = "grpc" | "http";

export const TRANSPORT_KINDS: readonly TransportKind[] = ["grpc", "http"];

export const DEFAULT_ENDPOINT = "http://localhost:3000";

type Env = Readonly<Record<string, string | undefined>>;

export interface EngramClientOptions {
  /** Base URL of the server, e.g. `http://localhost:3000`. Default: SERVICE_ENDPOINT, else DEFAULT_ENDPOINT. */
  readonly endpoint?: string | undefined;
  /** API key sent as `Authorization: Bearer <key>`. Default: SERVICE_API_KEY; none means only health routes work. */
  readonly apiKey?: string | undefined;
  /** `grpc` (HTTP/2 cleartext or TLS) or `http` (the HTTP/JSON routes). Default: SERVICE_TRANSPORT, else `http`. */
  readonly transport?: TransportKind | undefined;
  /** Extra interceptors, run outside the one that adds the API key. */
  readonly interceptors?: readonly Interceptor[] | undefined;
  /** Deadline applied to every call that does not pass its own `timeoutMs`. */
  readonly defaultTimeoutMs?: number | undefined;
  /** Where absent options are read from; default process.env. Tests pass `{}` to ignore the environment. */
  readonly env?: Env | undefined;
}

export interface ResolvedClientOptions {
  readonly endpoint: string;
  readonly apiKey: string | undefined;
  readonly transport: TransportKind;
  readonly interceptors: readonly Interceptor[];
  readonly defaultTimeoutMs: number | undefined;
}

export class ClientConfigError extends Error {}

function present(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed;
}

function parseEndpoint(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ClientConfigError(`endpoint must be an http:// or https:// URL, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ClientConfigError(`endpoint must be an http:// or https:// URL, got "${raw}"`);
  }
  if (url.search !== "" || url.hash !== "") throw new ClientConfigError(`endpoint must not have a query or fragment: "${raw}"`);
  // Without the trailing slash, so route templates and RPC paths can be appended as they are.
  return url.href.replace(/\/+$/, "");
}

function parseTransport(raw: string): TransportKind {
  const kind = raw.toLowerCase();
  if (kind === "grpc" || kind === "http") return kind;
  throw new ClientConfigError(`transport must be "grpc" or "http", got "${raw}"`);
}

export function resolveClientOptions(options: EngramClientOptions = {}): ResolvedClientOptions {
  const env = (): Env => options.env ?? process.env;
  const endpoint = present(options.endpoint) ?? present(env()["SERVICE_ENDPOINT"]) ?? DEFAULT_ENDPOINT;
  const transport = options.transport ?? present(env()["SERVICE_TRANSPORT"]) ?? "http";
  return {
    endpoint: parseEndpoint(endpoint),
    apiKey: present(options.apiKey) ?? present(env()["SERVICE_API_KEY"]),
    transport: parseTransport(transport),
    interceptors: options.interceptors ?? [],
    defaultTimeoutMs: options.defaultTimeoutMs,
  };
}
