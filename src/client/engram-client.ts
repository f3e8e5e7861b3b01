// createEngramClient: one typed Connect client per Engram service, over gRPC or the HTTP/JSON routes.
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { bearerAuth } from "./bearer-auth.js";
import { createHttpJsonTransport } from "./http-json-transport.js";
import { resolveClientOptions, type EngramClientOptions, type ResolvedClientOptions } from "./options.js";
import { ENGRAM_SERVICES, type EngramServices } from "./services.js";

/** One client per service: `client.memory.remember(…)`, `client.auth.getUser(…)`, `client.health.readyz({})`. */
export type ServiceClients<S extends Record<string, DescService>> = { readonly [K in keyof S]: Client<S[K]> };

export type EngramClient = ServiceClients<EngramServices>;

/** The transport the options select, with the API key added to every call. */
export function createEngramTransport(options: ResolvedClientOptions): Transport {
  // Interceptors apply last-to-first, so the caller's run outside (before) the one that adds the key.
  const interceptors = [...options.interceptors, ...(options.apiKey === undefined ? [] : [bearerAuth(options.apiKey)])];
  if (options.transport === "grpc") {
    // connect-node v2's gRPC transport is always HTTP/2 (cleartext for http:// endpoints): no httpVersion option.
    return createGrpcTransport({
      baseUrl: options.endpoint,
      interceptors,
      defaultTimeoutMs: options.defaultTimeoutMs,
    });
  }
  return createHttpJsonTransport({ baseUrl: options.endpoint, interceptors, defaultTimeoutMs: options.defaultTimeoutMs });
}

export function createServiceClients<S extends Record<string, DescService>>(services: S, transport: Transport): ServiceClients<S> {
  // Object.fromEntries loses the per-key types that the mapped type restores.
  return Object.fromEntries(
    Object.entries(services).map(([name, service]) => [name, createClient(service, transport)]),
  ) as ServiceClients<S>;
}

/**
 * Creates the Engram client. Options left out are read from SERVICE_ENDPOINT (default
 * http://localhost:3000), SERVICE_API_KEY and SERVICE_TRANSPORT (`grpc`, else HTTP/JSON).
 * Throws ClientConfigError on a malformed endpoint or transport.
 */
export function createEngramClient(options: EngramClientOptions = {}): EngramClient {
  return createServiceClients(ENGRAM_SERVICES, createEngramTransport(resolveClientOptions(options)));
}
