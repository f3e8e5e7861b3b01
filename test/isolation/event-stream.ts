// A server stream held open over SSE: messages are read one at a time, in order, until the test closes it.
import { createParser } from "eventsource-parser";
import type { JsonObject } from "../harness/callers.js";
import { routeOf } from "./route-caller.js";

export interface OpenStream {
  /** The next message; rejects when the stream ends first. */
  next(): Promise<JsonObject>;
  close(): void;
}

export async function openStream(baseUrl: string, rpc: string, request: JsonObject, key: string): Promise<OpenStream> {
  const binding = routeOf(rpc).bindings[0];
  if (binding === undefined) throw new Error(`${rpc} has no HTTP binding`);
  const url = new URL(binding.template, baseUrl);
  const init: RequestInit = { method: binding.verb, headers: { authorization: `Bearer ${key}` } };
  if (binding.body === "") {
    for (const [name, value] of Object.entries(request)) url.searchParams.set(name, String(value));
  } else {
    init.headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    init.body = JSON.stringify(request);
  }
  const abort = new AbortController();
  init.signal = abort.signal;
  const response = await fetch(url, init);
  if (!response.ok || !(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    throw new Error(`${rpc}: ${response.status} ${await response.text()}`);
  }
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const queue: JsonObject[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if (event.data.trim() !== "") queue.push(JSON.parse(event.data) as JsonObject);
    },
  });
  return {
    async next() {
      for (;;) {
        const message = queue.shift();
        if (message !== undefined) return message;
        const { done, value } = await reader.read();
        if (done) throw new Error(`${rpc}: the stream ended`);
        parser.feed(decoder.decode(value, { stream: true }));
      }
    },
    close() {
      abort.abort();
    },
  };
}
