// Calls a route over HTTP/JSON exactly as its google.api.http binding says: path parameters in the path, the rest in
// the query (GET, DELETE) or the JSON body. A server stream (SSE) answers with its first message, then is closed.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { Json, JsonObject } from "../harness/callers.js";
import type { HttpBinding } from "../../src/transport/gateway/http-rule.js";
import { routeCatalog, type Route } from "./route-catalog.js";

export interface Answer {
  readonly status: number;
  /** "ok" or the error's code. */
  readonly code: string;
  /** The error message; "" on success. */
  readonly message: string;
  /** The JSON body of a success (for a stream, its first message); text bodies as a string. */
  readonly body: Json;
}

const ROUTES = new Map(routeCatalog().map((r) => [r.rpc, r]));

export function routeOf(rpc: string): Route {
  const route = ROUTES.get(rpc);
  if (route === undefined) throw new Error(`no served RPC ${rpc}`);
  return route;
}

function urlOf(baseUrl: string, binding: HttpBinding, request: JsonObject): { url: URL; rest: JsonObject } {
  const rest: JsonObject = { ...request };
  const path = binding.segments
    .map((segment) => {
      if ("literal" in segment) return segment.literal;
      const value = rest[segment.variable];
      delete rest[segment.variable];
      return encodeURIComponent(value === undefined || value === null ? "" : String(value as string | number));
    })
    .join("/");
  const url = new URL(`/${path}`, baseUrl);
  if (binding.body === "") {
    for (const [name, value] of Object.entries(rest)) {
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(name, typeof item === "string" ? item : JSON.stringify(item));
    }
  }
  return { url, rest };
}

/** The first `data:` event of an SSE body; the stream is then cancelled. */
async function firstEvent(response: Response, abort: AbortController): Promise<Json> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const first = events.find((e) => e.data.trim() !== "");
      if (first !== undefined) return JSON.parse(first.data) as Json;
      const { done, value } = await reader.read();
      if (done) return null;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    abort.abort();
  }
}

/** Calls `binding` (default: the route's first) with `request` in proto JSON field names. */
export async function callRoute(baseUrl: string, route: Route, request: JsonObject, key: string | undefined, binding = route.bindings[0]): Promise<Answer> {
  if (binding === undefined) throw new Error(`${route.rpc} has no HTTP binding`);
  const { url, rest } = urlOf(baseUrl, binding, request);
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  const init: RequestInit = { method: binding.verb, headers };
  if (binding.body !== "") {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(rest);
  }
  const abort = new AbortController();
  init.signal = abort.signal;
  const response = await fetch(url, init);
  const type = response.headers.get("content-type") ?? "";
  if (response.ok && type.startsWith("text/event-stream")) {
    return { status: response.status, code: "ok", message: "", body: await firstEvent(response, abort) };
  }
  const text = await response.text();
  if (!type.startsWith("application/json")) {
    return { status: response.status, code: response.ok ? "ok" : "http_error", message: response.ok ? "" : text, body: response.ok ? text : null };
  }
  const json = (text === "" ? {} : JSON.parse(text)) as Json;
  if (response.ok) return { status: response.status, code: "ok", message: "", body: json };
  const error = (json ?? {}) as JsonObject;
  return { status: response.status, code: String(error["code"]), message: String(error["message"]), body: null };
}

/** Calls an RPC by name and fails the test's set-up unless it succeeds. */
export async function must(baseUrl: string, rpc: string, request: JsonObject, key: string): Promise<JsonObject> {
  const answer = await callRoute(baseUrl, routeOf(rpc), request, key);
  if (answer.code !== "ok") throw new Error(`${rpc} ${JSON.stringify(request)}: ${answer.status} ${answer.code}: ${answer.message}`);
  return answer.body as JsonObject;
}
