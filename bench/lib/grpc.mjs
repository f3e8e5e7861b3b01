// A plain @grpc/grpc-js client of Engram built from the .proto files at run time (no generated code), over h2c.
import path from "node:path";
import { createRequire } from "node:module";
import { ROOT } from "./server.mjs";

const require = createRequire(import.meta.url);

export function grpcClients(server) {
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
  const loaded = grpc.loadPackageDefinition(definition);
  const address = `127.0.0.1:${server.port}`;
  const credentials = grpc.credentials.createInsecure();
  const memory = new loaded.engram.v2.MemoryService(address, credentials);
  const health = new loaded.engram.v2.HealthService(address, credentials);
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${server.key}`);
  const unary = (client, method) => (request) =>
    new Promise((resolve, reject) => {
      client[method](request, metadata, { deadline: Date.now() + 60_000 }, (err, response) => (err ? reject(err) : resolve(response)));
    });
  return {
    query: unary(memory, "Query"),
    livez: unary(health, "Livez"),
    close() {
      memory.close();
      health.close();
    },
  };
}
