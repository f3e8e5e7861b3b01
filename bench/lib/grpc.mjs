// A plain @grpc/grpc-js client of Engram built from the .proto files at run time (no generated code), over h2c.
import path from "node:path";
import { createRequire } from "node:module";
import { ROOT } from "./server.mjs";

const require = createRequire(import.meta.url);

let services;

/** The proto files, parsed once per process: a bench may open hundreds of clients. */
function loadServices() {
  if (services) return services;
  const grpc = require("@grpc/grpc-js");
  const protoLoader = require("@grpc/proto-loader");
  const definition = protoLoader.loadSync(["engram/v2/memory_service.proto", "engram/v2/health_service.proto"], {
    includeDirs: [path.join(ROOT, "proto"), path.join(ROOT, "node_modules/google-proto-files")],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  services = { grpc, loaded: grpc.loadPackageDefinition(definition) };
  return services;
}

/**
 * Clients of MemoryService and HealthService. Clients made with the same address share one HTTP/2 connection (grpc-js
 * pools subchannels process-wide) unless `ownConnection`: then this client opens a connection of its own, as a
 * separate agent process would. `deadlineMs` bounds every call.
 */
export function grpcClients(server, { ownConnection = false, deadlineMs = 60_000 } = {}) {
  const { grpc, loaded } = loadServices();
  const address = `127.0.0.1:${server.port}`;
  const credentials = grpc.credentials.createInsecure();
  const options = ownConnection ? { "grpc.use_local_subchannel_pool": 1 } : {};
  const memory = new loaded.engram.v2.MemoryService(address, credentials, options);
  const health = new loaded.engram.v2.HealthService(address, credentials, options);
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${server.key}`);
  const unary = (client, method) => (request) =>
    new Promise((resolve, reject) => {
      client[method](request, metadata, { deadline: Date.now() + deadlineMs }, (err, response) => (err ? reject(err) : resolve(response)));
    });
  return {
    query: unary(memory, "Query"),
    batchInsert: unary(memory, "BatchInsert"),
    remember: unary(memory, "Remember"),
    getContext: unary(memory, "GetContext"),
    listActivity: unary(memory, "ListActivity"),
    livez: unary(health, "Livez"),
    close() {
      memory.close();
      health.close();
    },
  };
}
