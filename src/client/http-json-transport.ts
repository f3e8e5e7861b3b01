// A Connect Transport over Engram's HTTP/JSON routes: each RPC is sent to its google.api.http route with
// fetch, so generated clients work unchanged against the REST surface. Server streams are read as SSE.
import { toJson, type DescMessage, type DescMethod, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type Interceptor, type Transport } from "@connectrpc/connect";
import { runStreamingCall, runUnaryCall } from "@connectrpc/connect/protocol";
import { bindingsOf } from "../transport/gateway/http-rule.js";
import { buildHttpCall, type HttpCall } from "./http-request.js";
import { decodeUnaryResponse, errorFromResponse } from "./http-response.js";
import { sseMessages } from "./sse.js";

export interface HttpJsonTransportOptions {
  /** Server base URL without a trailing slash, e.g. `http://localhost:3000`. */
  readonly baseUrl: string;
  readonly interceptors?: readonly Interceptor[] | undefined;
  /** Deadline of calls that pass no `timeoutMs`; undefined means none. */
  readonly defaultTimeoutMs?: number | undefined;
  /** The fetch implementation; default the global one. */
  readonly fetch?: typeof globalThis.fetch | undefined;
}

function jsonObject<I extends DescMessage>(schema: I, message: MessageShape<I>, alwaysEmitImplicit: boolean): JsonObject {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit });
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConnectError(`${schema.typeName} does not encode as a JSON object, so it cannot be a route request`, Code.Internal);
  }
  return json;
}

/** What interceptors see as the request URL and verb: the primary route, before path parameters are filled. */
function routeLabel(baseUrl: string, method: DescMethod): { url: string; requestMethod: string } {
  const [primary] = bindingsOf(method);
  if (primary === undefined) {
    throw new ConnectError(`${method.parent.typeName}.${method.name} has no HTTP route; use the grpc transport`, Code.Unimplemented);
  }
  return { url: `${baseUrl}${primary.template}`, requestMethod: primary.verb };
}

async function firstMessage<T>(messages: AsyncIterable<T>): Promise<T> {
  for await (const message of messages) return message;
  throw new ConnectError("a server-streaming call needs one request message", Code.InvalidArgument);
}

export function createHttpJsonTransport(options: HttpJsonTransportOptions): Transport {
  const { baseUrl } = options;
  const fetchFn = options.fetch ?? globalThis.fetch;
  const interceptors = [...(options.interceptors ?? [])];
  const deadline = (timeoutMs: number | undefined): number | undefined =>
    timeoutMs === undefined ? options.defaultTimeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;

  function callOf<I extends DescMessage>(method: DescMethod & { input: I }, message: MessageShape<I>): HttpCall {
    return buildHttpCall(baseUrl, method, jsonObject(method.input, message, false), jsonObject(method.input, message, true));
  }

  async function send(call: HttpCall, header: Headers, signal: AbortSignal, accept: string): Promise<Response> {
    header.set("accept", accept);
    if (call.body === undefined) header.delete("content-type");
    else header.set("content-type", "application/json");
    try {
      return await fetchFn(call.url, { method: call.verb, headers: header, body: call.body, signal });
    } catch (e: unknown) {
      // An abort is the deadline or the caller's cancellation; runUnaryCall turns it into the right code.
      if (signal.aborted) throw e;
      const cause = e instanceof Error && e.cause instanceof Error ? e.cause.message : e instanceof Error ? e.message : String(e);
      throw new ConnectError(`cannot reach ${new URL(baseUrl).origin}: ${cause}`, Code.Unavailable, undefined, undefined, e);
    }
  }

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      return runUnaryCall({
        interceptors,
        signal,
        timeoutMs: deadline(timeoutMs),
        req: {
          stream: false,
          service: method.parent,
          method,
          ...routeLabel(baseUrl, method),
          header: new Headers(header),
          contextValues: contextValues ?? createContextValues(),
          message: input,
        },
        next: async (req) => {
          const call = callOf(method, req.message);
          const res = await send(call, req.header, req.signal, "application/json");
          const bytes = new Uint8Array(await res.arrayBuffer());
          return {
            stream: false,
            service: method.parent,
            method,
            header: res.headers,
            trailer: new Headers(),
            message: decodeUnaryResponse(method.output, call.binding, res.status, res.statusText, res.headers, bytes),
          };
        },
      });
    },

    async stream(method, signal, timeoutMs, header, input, contextValues) {
      if (method.methodKind !== "server_streaming") {
        throw new ConnectError(
          `${method.parent.typeName}.${method.name}: only unary and server-streaming RPCs have HTTP routes; use the grpc transport`,
          Code.Unimplemented,
        );
      }
      return runStreamingCall({
        interceptors,
        signal,
        timeoutMs: deadline(timeoutMs),
        req: {
          stream: true,
          service: method.parent,
          method,
          ...routeLabel(baseUrl, method),
          header: new Headers(header),
          contextValues: contextValues ?? createContextValues(),
          message: input,
        },
        next: async (req) => {
          const message = await firstMessage(req.message);
          const call = callOf(method, message);
          const res = await send(call, req.header, req.signal, "text/event-stream");
          const contentType = res.headers.get("content-type") ?? "";
          if (!res.ok || !contentType.startsWith("text/event-stream")) {
            const bytes = new Uint8Array(await res.arrayBuffer());
            if (res.ok) throw new ConnectError(`expected text/event-stream, got "${contentType}"`, Code.Internal);
            throw errorFromResponse(res.status, res.statusText, res.headers, bytes);
          }
          return {
            stream: true,
            service: method.parent,
            method,
            header: res.headers,
            trailer: new Headers(),
            message: sseMessages(method.output, res.body ?? emptyBody()),
          };
        },
      });
    },
  };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}
