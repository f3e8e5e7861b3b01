// The MCP tool definitions: each tool's input and output JSON Schema derived from its RPC's request and response
// messages, so the schemas an agent sees are the protos' and cannot drift from what the service reads and answers.
import fs from "node:fs";
import { createFileRegistry, fromBinary, type DescMessage, type FileRegistry, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { builtImagePath } from "../platform/build-output.js";
import { inlineMessageSchema, type JsonSchema } from "../protocol/message-json-schema.js";
import { protoComment } from "../protocol/proto-comments.js";
import type { McpTool } from "./tools.js";

let image: FileRegistry | null | undefined;

/**
 * The message as the build's image describes it, so its fields carry their proto comments as descriptions; the
 * gen/ descriptor itself (same fields, no comments) when the image is absent, as in a run from sources.
 */
function commented(desc: DescMessage): DescMessage {
  if (image === undefined) {
    try {
      image = createFileRegistry(fromBinary(FileDescriptorSetSchema, fs.readFileSync(builtImagePath())));
    } catch {
      image = null;
    }
  }
  return image?.getMessage(desc.typeName) ?? desc;
}

/**
 * Formats MCP clients are expected to know: JSON Schema's own and OpenAPI's numeric and binary ones. The SDK's client
 * validates a result against the tool's output schema with Ajv and ajv-formats, which warns once per unknown format
 * (e.g. `uint32`) each time it compiles one; the integer bounds beside such a format already say what it would.
 */
const KNOWN_FORMATS = new Set([
  "date-time",
  "date",
  "time",
  "duration",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "uri",
  "uri-reference",
  "uri-template",
  "uuid",
  "regex",
  "json-pointer",
  "relative-json-pointer",
  "int32",
  "int64",
  "float",
  "double",
  "byte",
  "binary",
  "password",
]);

/** The schema without `format` keywords clients do not know; a property named `format` is a schema and stays. */
function withKnownFormats(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(withKnownFormats);
  if (typeof value !== "object" || value === null) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === "format" && typeof child === "string" && !KNOWN_FORMATS.has(child)) continue;
    out[key] = withKnownFormats(child);
  }
  return out;
}

function objectSchema(schema: JsonSchema): Tool["inputSchema"] {
  // Requests and responses are messages, never well-known types, so their schema is always an object schema.
  return { ...(withKnownFormats(schema) as JsonObject), type: "object" };
}

export function toolDefinition(tool: McpTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    // The proto3 JSON the RPC reads, its fields described by their proto comments for the agent that fills them in.
    inputSchema: objectSchema(inlineMessageSchema(commented(tool.method.input), { direction: "request", describe: protoComment })),
    // The JSON it answers (a result's structuredContent, which clients check): the shape only, since the comments of
    // every response field would double what a client puts in its model's context for each tool.
    outputSchema: objectSchema(inlineMessageSchema(tool.method.output, { direction: "response" })),
    annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: tool.destructive, openWorldHint: false },
  };
}
