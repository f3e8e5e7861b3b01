// Builds an RPC's JSON request from an HTTP request: the JSON body, then path parameters, then query parameters.
import { ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { assertJsonDepth } from "../json-depth.js";
import type { HttpBinding } from "./http-rule.js";

function fieldByName(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

/** Converts one query or path string to the JSON the field expects; protobuf JSON then checks it in full. */
function scalarJson(field: DescField, raw: string, where: string): JsonValue {
  if (field.fieldKind === "enum") return raw;
  if (field.fieldKind !== "scalar" && field.fieldKind !== "list") {
    throw invalidArgument(field.name, `cannot be set from the ${where}`);
  }
  const scalar = field.fieldKind === "scalar" ? field.scalar : field.listKind === "scalar" ? field.scalar : undefined;
  if (scalar === undefined) {
    if (field.fieldKind === "list" && field.listKind === "enum") return raw;
    throw invalidArgument(field.name, `cannot be set from the ${where}`);
  }
  switch (scalar) {
    case ScalarType.BOOL:
      if (raw === "true" || raw === "1") return true;
      if (raw === "false" || raw === "0") return false;
      throw invalidArgument(field.name, `must be true or false, got ${quoted(raw)}`);
    case ScalarType.INT32:
    case ScalarType.UINT32:
    case ScalarType.SINT32:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      const value = Number(raw);
      if (raw.trim() === "" || Number.isNaN(value)) throw invalidArgument(field.name, `must be a number, got ${quoted(raw)}`);
      return value;
    }
    default:
      // Strings, bytes (base64) and 64-bit integers are strings in protobuf JSON.
      return raw;
  }
}

/**
 * Items of a repeated field from one query value: a JSON array of strings or numbers (as some clients send),
 * else a comma-separated list. Repeating the parameter is the way to send items that contain commas.
 */
function listItems(value: string): string[] {
  if (value.startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(value);
      if (Array.isArray(parsed) && parsed.every((v) => typeof v === "string" || typeof v === "number")) {
        return parsed.map(String);
      }
    } catch {
      // not JSON: fall through to the comma-separated reading
    }
  }
  return value.split(",").filter((v) => v !== "");
}

export interface HttpRequestParts {
  readonly body: Buffer;
  readonly pathParams: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
}

function parseBody(body: Buffer): JsonValue | undefined {
  if (body.length === 0) return undefined;
  assertJsonDepth("body", body);
  try {
    return JSON.parse(body.toString("utf8")) as JsonValue;
  } catch (e: unknown) {
    throw invalidArgument("body", `malformed JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function requestJson(binding: HttpBinding, parts: HttpRequestParts): JsonObject {
  const input = binding.method.input;
  let json: JsonObject = {};
  if (binding.body === "*") {
    const parsed = parseBody(parts.body);
    if (parsed !== undefined) {
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw invalidArgument("body", "must be a JSON object");
      }
      json = parsed;
    }
  } else if (binding.body !== "") {
    const parsed = parseBody(parts.body);
    if (parsed !== undefined) json[binding.body] = parsed;
  }
  for (const [name, raw] of Object.entries(parts.pathParams)) {
    const field = fieldByName(input, name);
    if (field === undefined) throw invalidArgument(name, "path parameter has no field");
    json[field.name] = scalarJson(field, raw, "path");
  }
  if (binding.body !== "*") {
    for (const name of new Set(parts.query.keys())) {
      const field = fieldByName(input, name);
      if (field === undefined) throw invalidArgument("query", `unknown parameter ${quoted(name)}`);
      if (name in parts.pathParams) continue;
      const values = parts.query.getAll(name);
      if (field.fieldKind === "list") {
        json[field.name] = values.flatMap(listItems).map((v) => scalarJson(field, v, "query"));
      } else {
        json[field.name] = scalarJson(field, values[values.length - 1] as string, "query");
      }
    }
  }
  return json;
}
