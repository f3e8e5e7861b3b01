// One way to call an RPC per transport, so a single table of cases runs over REST, Connect and gRPC.
// REST and Connect use fetch; gRPC uses @grpc/grpc-js with @grpc/proto-loader reading our .proto files.
import fs from "node:fs";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ENGRAM_ROUTES, SPEC_ROUTES } from "./spec-routes.js";

export type TransportName = "rest" | "connect" | "grpc";
export const TRANSPORTS: readonly TransportName[] = ["rest", "connect", "grpc"];

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface CallResult {
  /** "ok" or the snake_case error code. */
  readonly code: string;
  readonly message: string;
  /** Response message with proto (snake_case) field names; {} on error. */
  readonly body: JsonObject;
  /** HTTP status for REST and Connect; undefined for gRPC. */
  readonly status: number | undefined;
  /**
   * Engram's own response header fields (`engram-*`; gRPC: header metadata, and trailers on an error), lower-case
   * names. Transport headers (`date`, `content-length`…) are left out: tests compare whole results.
   */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface Caller {
  readonly transport: TransportName;
  /** Calls `rpc` ("engram.v2.MemoryService/Remember") with a request in proto JSON field names. */
  call(rpc: string, request: JsonObject, key?: string): Promise<CallResult>;
  close(): void;
}

const GRPC_CODE_NAMES = [
  "ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
  "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range", "unimplemented",
  "internal", "unavailable", "data_loss", "unauthenticated",
];

function authHeaders(key: string | undefined): Record<string, string> {
  return key === undefined ? {} : { authorization: `Bearer ${key}` };
}

function isEngramHeader(name: string): boolean {
  return name.startsWith("engram-");
}

async function resultFromFetch(response: Response): Promise<CallResult> {
  const text = await response.text();
  const json = (text === "" ? {} : JSON.parse(text)) as JsonObject;
  const headers = Object.fromEntries([...response.headers.entries()].filter(([name]) => isEngramHeader(name)));
  if (response.ok) return { code: "ok", message: "", body: json, status: response.status, headers };
  return { code: String(json["code"]), message: String(json["message"]), body: {}, status: response.status, headers };
}

export function restCaller(baseUrl: string): Caller {
  return {
    transport: "rest",
    async call(rpc, request, key) {
      const route = [...SPEC_ROUTES, ...ENGRAM_ROUTES].find((r) => r.rpc === rpc);
      if (route === undefined) throw new Error(`no REST route for ${rpc} in the test's route table`);
      const fields = { ...request };
      const urlPath = route.path.replace(/:([a-z_]+)/g, (_m, name: string) => {
        const value = fields[name];
        delete fields[name];
        return encodeURIComponent(String(value));
      });
      const url = new URL(urlPath, baseUrl);
      const init: RequestInit = { method: route.method, headers: authHeaders(key) };
      if (route.method === "GET" || route.method === "DELETE") {
        for (const [name, value] of Object.entries(fields)) url.searchParams.set(name, String(value));
      } else {
        init.headers = { ...authHeaders(key), "content-type": "application/json" };
        init.body = JSON.stringify(fields);
      }
      return resultFromFetch(await fetch(url, init));
    },
    close() {},
  };
}

export function connectCaller(baseUrl: string): Caller {
  return {
    transport: "connect",
    async call(rpc, request, key) {
      const response = await fetch(new URL(`/${rpc}`, baseUrl), {
        method: "POST",
        headers: { ...authHeaders(key), "content-type": "application/json", "connect-protocol-version": "1" },
        body: JSON.stringify(request),
      });
      return resultFromFetch(response);
    },
    close() {},
  };
}

const PROTO_ROOT = path.resolve("proto");
let packageDefinition: protoLoader.PackageDefinition | undefined;

function loadProtos(): protoLoader.PackageDefinition {
  packageDefinition ??= protoLoader.loadSync(
    fs.readdirSync(path.join(PROTO_ROOT, "engram/v2")).map((file) => `engram/v2/${file}`),
    {
      includeDirs: [PROTO_ROOT, path.resolve("node_modules/google-proto-files")],
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      arrays: true,
      bytes: String,
    },
  );
  return packageDefinition;
}

type UnaryFn = (
  request: object,
  metadata: grpc.Metadata,
  callback: (error: grpc.ServiceError | null, response: JsonObject) => void,
) => grpc.ClientUnaryCall;

export function grpcCaller(port: number): Caller {
  const definition = loadProtos();
  const clients = new Map<string, grpc.Client>();
  const clientFor = (service: string): grpc.Client => {
    let client = clients.get(service);
    if (client === undefined) {
      const serviceDef = definition[service] as grpc.ServiceDefinition;
      const Ctor = grpc.makeGenericClientConstructor(serviceDef, service);
      client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      clients.set(service, client);
    }
    return client;
  };
  return {
    transport: "grpc",
    call(rpc, request, key) {
      const [service, method] = rpc.split("/") as [string, string];
      const client = clientFor(service) as unknown as Record<string, UnaryFn>;
      const fn = client[method] ?? client[method.charAt(0).toLowerCase() + method.slice(1)];
      if (fn === undefined) throw new Error(`no gRPC method ${rpc}`);
      const metadata = new grpc.Metadata();
      if (key !== undefined) metadata.set("authorization", `Bearer ${key}`);
      return new Promise((resolve) => {
        const headers: Record<string, string> = {};
        const unary = fn.call(client, request, metadata, (error, response) => {
          if (error) {
            // An error answer is trailers-only: its metadata arrives with the status.
            for (const [name, value] of Object.entries(error.metadata?.getMap() ?? {})) if (isEngramHeader(name)) headers[name] ??= String(value);
            resolve({ code: GRPC_CODE_NAMES[error.code] ?? "unknown", message: error.details, body: {}, status: undefined, headers });
          } else {
            resolve({ code: "ok", message: "", body: response, status: undefined, headers });
          }
        });
        unary.on("metadata", (received: grpc.Metadata) => {
          for (const [name, value] of Object.entries(received.getMap())) if (isEngramHeader(name)) headers[name] = String(value);
        });
      });
    },
    close() {
      for (const client of clients.values()) client.close();
    },
  };
}

export function callerFor(transport: TransportName, baseUrl: string, port: number): Caller {
  switch (transport) {
    case "rest":
      return restCaller(baseUrl);
    case "connect":
      return connectCaller(baseUrl);
    case "grpc":
      return grpcCaller(port);
  }
}

/** Opens a gRPC server stream with @grpc/grpc-js; messages use proto field names. */
export function grpcStream(port: number, rpc: string, request: JsonObject, key: string): grpc.ClientReadableStream<JsonObject> {
  const definition = loadProtos();
  const [service, method] = rpc.split("/") as [string, string];
  const Ctor = grpc.makeGenericClientConstructor(definition[service] as grpc.ServiceDefinition, service);
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (req: object, md: grpc.Metadata) => grpc.ClientReadableStream<JsonObject>
  >;
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${key}`);
  const open = client[method] as (req: object, md: grpc.Metadata) => grpc.ClientReadableStream<JsonObject>;
  const stream = open.call(client, request, metadata);
  stream.on("close", () => (client as unknown as grpc.Client).close());
  return stream;
}

/** Collects a server stream's messages; `next(n)` resolves once `n` have arrived (no timer decides it). */
export function collectStream(stream: grpc.ClientReadableStream<JsonObject>): { readonly received: JsonObject[]; next(count: number): Promise<void> } {
  const received: JsonObject[] = [];
  const waiters: (() => void)[] = [];
  stream.on("data", (message: JsonObject) => {
    received.push(message);
    waiters.shift()?.();
  });
  stream.on("error", () => undefined);
  return {
    received,
    async next(count) {
      while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}
