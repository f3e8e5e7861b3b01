// Converts MCP tool arguments to an RPC request and an RPC response to a tool result, both in proto3 JSON.
import { fromJson, toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { boundedMessage } from "../platform/errors.js";

/**
 * The request the arguments spell, with lowerCamel or proto field names as on the HTTP routes. A field the request
 * does not have, or a value of the wrong type, is INVALID_ARGUMENT naming it, never silently dropped.
 */
export function requestOf<I extends DescMessage>(schema: I, args: JsonObject): MessageShape<I> {
  try {
    return fromJson(schema, args, { ignoreUnknownFields: false });
  } catch (e: unknown) {
    throw new ConnectError(boundedMessage(e instanceof Error ? e.message : String(e)), Code.InvalidArgument);
  }
}

/** The response as the HTTP routes answer it: proto field names, every documented field present. */
export function responseJson<O extends DescMessage>(schema: O, message: MessageShape<O>): JsonObject {
  const json = toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true });
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConnectError(`${schema.typeName} does not encode as a JSON object`, Code.Internal);
  }
  return json;
}
