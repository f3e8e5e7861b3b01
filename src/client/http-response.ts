// Reads HTTP/JSON route responses back into RPC responses, and error bodies into ConnectErrors.
import { create, fromJson, type DescMessage, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeFromHttpStatus, codeFromString, errorFromJson } from "@connectrpc/connect/protocol-connect";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import type { HttpBinding } from "../transport/gateway/http-rule.js";

const decoder = new TextDecoder();

function parseJson(bytes: Uint8Array): JsonValue | undefined {
  try {
    return JSON.parse(decoder.decode(bytes)) as JsonValue;
  } catch {
    return undefined;
  }
}

function isObject(value: JsonValue | undefined): value is { [k: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `{"code": "...", "message": "...", "details": [...]}`, the one error body every route uses. */
function isErrorBody(value: JsonValue | undefined): value is { [k: string]: JsonValue } {
  return isObject(value) && typeof value["code"] === "string" && codeFromString(value["code"]) !== undefined;
}

function errorFromBody(json: { [k: string]: JsonValue }, status: number, header: Headers): ConnectError {
  const message = typeof json["message"] === "string" ? json["message"] : `HTTP ${status}`;
  const code = codeFromString(String(json["code"])) ?? codeFromHttpStatus(status);
  // errorFromJson also decodes `details`; when they are not Connect-shaped it throws this fallback instead.
  const fallback = new ConnectError(message, code);
  try {
    return errorFromJson(json, header, fallback);
  } catch (e: unknown) {
    return e instanceof ConnectError ? e : fallback;
  }
}

/** The error of a non-2xx response whose body is not a response message (see decodeUnaryResponse). */
export function errorFromResponse(status: number, statusText: string, header: Headers, bytes: Uint8Array): ConnectError {
  const json = parseJson(bytes);
  if (isErrorBody(json)) return errorFromBody(json, status, header);
  const text = decoder.decode(bytes).trim().slice(0, 200);
  const reason = `HTTP ${status}${statusText ? ` ${statusText}` : ""}${text ? `: ${text}` : ""}`;
  return new ConnectError(reason, codeFromHttpStatus(status), header);
}

/** Wraps the route's response body back into the RPC's response message, per the rule's `response_body`. */
function decodeBody<O extends DescMessage>(output: O, binding: HttpBinding, header: Headers, bytes: Uint8Array): MessageShape<O> {
  if (binding.responseBody === "") {
    const json = bytes.byteLength === 0 ? {} : parseJson(bytes);
    if (json === undefined) throw new ConnectError("response body is not JSON", Code.Internal);
    return fromJson(output, json, { ignoreUnknownFields: true });
  }
  const field = output.fields.find((f) => f.name === binding.responseBody);
  if (field === undefined) throw new ConnectError(`response_body "${binding.responseBody}" is not a field of ${output.typeName}`, Code.Internal);
  if (field.message?.typeName === HttpBodySchema.typeName) {
    const message = create(output);
    const body = create(HttpBodySchema, { contentType: header.get("content-type") ?? "", data: bytes });
    reflect(output, message).set(field, reflect(HttpBodySchema, body));
    return message;
  }
  const value = bytes.byteLength === 0 ? null : parseJson(bytes);
  if (value === undefined) throw new ConnectError("response body is not JSON", Code.Internal);
  return fromJson(output, { [field.name]: value }, { ignoreUnknownFields: true });
}

/**
 * Reads a unary route's response. A non-2xx status is an error, except when the body is the response message
 * itself: /readyz answers 503 with `{"status":"not_ready",…}`, which gRPC callers get as a plain response.
 */
export function decodeUnaryResponse<O extends DescMessage>(
  output: O,
  binding: HttpBinding,
  status: number,
  statusText: string,
  header: Headers,
  bytes: Uint8Array,
): MessageShape<O> {
  if (status >= 200 && status < 300) return decodeBody(output, binding, header, bytes);
  const json = parseJson(bytes);
  if (!isErrorBody(json) && isObject(json) && Object.keys(json).length > 0 && binding.responseBody === "") {
    try {
      // Strict, so that an unrelated JSON error page is not mistaken for an empty response.
      return fromJson(output, json, { ignoreUnknownFields: false });
    } catch {
      // Not the response message: fall through to the error.
    }
  }
  throw errorFromResponse(status, statusText, header, bytes);
}
