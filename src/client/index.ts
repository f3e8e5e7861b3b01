// The Engram TypeScript client: typed Connect clients for every service, over gRPC or HTTP/JSON.
export { createEngramClient, createEngramTransport, createServiceClients } from "./engram-client.js";
export type { EngramClient, ServiceClients } from "./engram-client.js";
export { createHttpJsonTransport } from "./http-json-transport.js";
export type { HttpJsonTransportOptions } from "./http-json-transport.js";
export { bearerAuth } from "./bearer-auth.js";
export { ENGRAM_SERVICES } from "./services.js";
export type { EngramServiceName, EngramServices } from "./services.js";
export { ClientConfigError, DEFAULT_ENDPOINT, TRANSPORT_KINDS, resolveClientOptions } from "./options.js";
export type { EngramClientOptions, ResolvedClientOptions, TransportKind } from "./options.js";
