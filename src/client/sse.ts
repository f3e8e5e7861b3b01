// Reads a server-streaming route's text/event-stream body: one response message per `data:` event.
import { fromJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import { createParser, type EventSourceMessage } from "eventsource-parser";

/** The gateway ends a failing stream with `{"type":"error","code":…,"message":…}` (or an `event: error`). */
const ERROR_KEYS = new Set(["type", "code", "message", "details"]);

function errorOf(event: EventSourceMessage, json: JsonValue): ConnectError | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const looksLikeError =
    event.event === "error" ||
    (json["type"] === "error" && typeof json["code"] === "string" && Object.keys(json).every((k) => ERROR_KEYS.has(k)));
  if (!looksLikeError) return undefined;
  const code = typeof json["code"] === "string" ? (codeFromString(json["code"]) ?? Code.Unknown) : Code.Unknown;
  return new ConnectError(typeof json["message"] === "string" ? json["message"] : "stream failed", code);
}

function messageOf<O extends DescMessage>(output: O, event: EventSourceMessage): MessageShape<O> {
  let json: JsonValue;
  try {
    json = JSON.parse(event.data) as JsonValue;
  } catch {
    throw new ConnectError(`event data is not JSON: ${event.data.slice(0, 200)}`, Code.Internal);
  }
  const error = errorOf(event, json);
  if (error !== undefined) throw error;
  return fromJson(output, json, { ignoreUnknownFields: true });
}

/** Yields the stream's messages as they arrive; keep-alive comments and empty events are skipped. */
export async function* sseMessages<O extends DescMessage>(
  output: O,
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<MessageShape<O>> {
  const pending: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => pending.push(event) });
  const decoder = new TextDecoder();
  const drain = function* (): Generator<MessageShape<O>> {
    for (let event = pending.shift(); event !== undefined; event = pending.shift()) {
      if (event.data.trim() !== "") yield messageOf(output, event);
    }
  };
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    yield* drain();
  }
  parser.feed(decoder.decode());
  yield* drain();
}
