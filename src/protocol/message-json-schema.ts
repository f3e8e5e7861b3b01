// Turns protobuf message descriptors into JSON Schema (draft 2020-12, as OpenAPI 3.1 and MCP tool schemas use it)
// that follows the proto3 JSON mapping exactly as Engram's transports read requests and write responses.
import { ScalarType, type DescEnum, type DescEnumValue, type DescField, type DescMessage, type JsonObject } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";

/** A JSON Schema object; plain JSON, so it can be serialised as is. */
export type JsonSchema = JsonObject;

/**
 * Which side of the wire a schema describes; the proto3 JSON mapping is lenient when parsing and exact when printing.
 * - `request`: what the server accepts. Every field is optional; 64-bit integers are decimal strings or integers;
 *   enums are value names or numbers; a field may be sent under its proto name or its lowerCamel JSON name
 *   (`propertyNames` lists both), any other key is rejected as the server does.
 * - `response`: what the server sends (Connect and the HTTP gateway print with proto field names and
 *   `alwaysEmitImplicit`). Fields without presence (plain scalars, enums, repeated, maps) are always present and
 *   listed in `required`; message fields, `optional` fields and oneof members appear only when set; 64-bit integers
 *   are decimal strings; enums are value names; no other key appears.
 */
export type SchemaDirection = "request" | "response";

/** A description for a message, field, enum or enum value (e.g. its proto comment), or undefined for none. */
export type Describe = (desc: DescMessage | DescField | DescEnum | DescEnumValue) => string | undefined;

export interface InlineSchemaOptions {
  readonly direction: SchemaDirection;
  readonly describe?: Describe;
}

/**
 * Mode b: the whole schema of one message with every nested message inlined (MCP tool input schemas). A message
 * reached again inside itself becomes `{"type": "object"}`, so recursive messages stay finite.
 */
export function inlineMessageSchema(desc: DescMessage, options: InlineSchemaOptions): JsonSchema {
  const expanding = new Set<string>();
  const writer: SchemaWriter = new SchemaWriter(options.direction, options.describe, (message): JsonSchema => {
    if (expanding.has(message.typeName)) return { type: "object" };
    expanding.add(message.typeName);
    try {
      return writer.message(message);
    } finally {
      expanding.delete(message.typeName);
    }
  });
  return writer.messageOrWellKnown(desc);
}

export interface SchemaComponentsOptions {
  readonly describe?: Describe;
  /** Prefix of every `$ref`; `#/components/schemas/` (OpenAPI) unless given. */
  readonly refPrefix?: string;
  /**
   * The component name of a message's schema in one direction. The default names the response schema by the full
   * type name (`engram.v2.Entry`) and the request schema by the same with `.Input` appended: the two differ, so a
   * message used both ways needs two components.
   */
  readonly name?: (desc: DescMessage, direction: SchemaDirection) => string;
}

/**
 * Mode a: message schemas as named components that refer to each other with `$ref` (OpenAPI `components.schemas`);
 * recursion is a `$ref` to a component being built. Well-known types with a JSON form of their own (Timestamp,
 * Struct, wrappers, …) are inlined rather than named.
 */
export class SchemaComponents {
  readonly #schemas: Record<string, JsonSchema> = {};
  readonly #describe: Describe | undefined;
  readonly #refPrefix: string;
  readonly #name: (desc: DescMessage, direction: SchemaDirection) => string;

  constructor(options: SchemaComponentsOptions = {}) {
    this.#describe = options.describe;
    this.#refPrefix = options.refPrefix ?? "#/components/schemas/";
    this.#name = options.name ?? ((desc, direction) => (direction === "response" ? desc.typeName : `${desc.typeName}.Input`));
  }

  /** A schema for the message in that direction: a `$ref` to its component (added on first use) or an inline WKT. */
  ref(desc: DescMessage, direction: SchemaDirection): JsonSchema {
    const writer = new SchemaWriter(direction, this.#describe, (message) => this.#component(message, direction));
    return writer.messageOrWellKnown(desc);
  }

  /** Every component added so far, by name. */
  get schemas(): Readonly<Record<string, JsonSchema>> {
    return this.#schemas;
  }

  #component(desc: DescMessage, direction: SchemaDirection): JsonSchema {
    const name = this.#name(desc, direction);
    const ref = { $ref: `${this.#refPrefix}${name}` };
    if (name in this.#schemas) return ref;
    // Claimed before it is written, so a recursive field refers to it instead of writing it again.
    this.#schemas[name] = {};
    const writer = new SchemaWriter(direction, this.#describe, (message) => this.#component(message, direction));
    this.#schemas[name] = writer.message(desc);
    return ref;
  }
}

const INT32_RANGE = { minimum: -2147483648, maximum: 2147483647 };
const UINT32_RANGE = { minimum: 0, maximum: 4294967295 };
const SIGNED_DECIMAL = "^-?[0-9]+$";
const UNSIGNED_DECIMAL = "^[0-9]+$";

/** Writes schemas for one direction; `nested` decides how a non-WKT message inside another is written. */
class SchemaWriter {
  constructor(
    private readonly direction: SchemaDirection,
    private readonly describe: Describe | undefined,
    private readonly nested: (desc: DescMessage) => JsonSchema,
  ) {}

  /** A well-known type's own JSON form, else what `nested` gives. */
  messageOrWellKnown(desc: DescMessage): JsonSchema {
    return wellKnown(desc, this.direction) ?? this.nested(desc);
  }

  /** The object schema of a message's fields. */
  message(desc: DescMessage): JsonSchema {
    const properties: JsonObject = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      properties[field.name] = this.#field(field);
      if (this.direction === "response" && alwaysPrinted(field)) required.push(field.name);
    }
    const schema: JsonSchema = { type: "object" };
    this.#addDescription(schema, desc);
    schema["properties"] = properties;
    if (required.length > 0) schema["required"] = required;
    const aliases = desc.fields.filter((f) => f.jsonName !== "" && f.jsonName !== f.name).map((f) => f.jsonName);
    if (this.direction === "request" && aliases.length > 0) {
      schema["propertyNames"] = { enum: [...desc.fields.map((f) => f.name), ...aliases] };
    } else {
      schema["additionalProperties"] = false;
    }
    const oneofs = desc.oneofs.filter((o) => o.fields.length > 1);
    if (oneofs.length > 0) schema["dependentSchemas"] = Object.assign({}, ...oneofs.map((o) => oneofMembers(o.fields.map((f) => f.name)))) as JsonObject;
    return schema;
  }

  #field(field: DescField): JsonSchema {
    let schema: JsonSchema;
    switch (field.fieldKind) {
      case "scalar":
        schema = scalarSchema(field.scalar, this.direction);
        break;
      case "enum":
        schema = this.#enum(field.enum);
        break;
      case "message":
        schema = { ...this.messageOrWellKnown(field.message) };
        break;
      case "list":
        schema = { type: "array", items: this.#element(field) };
        break;
      case "map":
        schema = { type: "object", additionalProperties: this.#element(field) };
        if (field.mapKey !== ScalarType.STRING) schema["propertyNames"] = mapKeySchema(field.mapKey);
        break;
    }
    this.#addDescription(schema, field);
    if (field.deprecated) schema["deprecated"] = true;
    return schema;
  }

  /** The schema of one item of a list, or one value of a map. */
  #element(field: DescField & { fieldKind: "list" | "map" }): JsonSchema {
    const kind = field.fieldKind === "list" ? field.listKind : field.mapKind;
    if (kind === "message" && field.message !== undefined) return this.messageOrWellKnown(field.message);
    if (kind === "enum" && field.enum !== undefined) return this.#enum(field.enum);
    return scalarSchema(field.scalar ?? ScalarType.STRING, this.direction);
  }

  #enum(desc: DescEnum): JsonSchema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    const names = desc.values.map((v) => v.jsonName);
    const schema: JsonSchema =
      this.direction === "response"
        ? { type: "string", enum: names }
        : { anyOf: [{ type: "string", enum: names }, { type: "integer", enum: desc.values.map((v) => v.number) }] };
    const lines = desc.values.flatMap((v) => {
      const text = this.describe?.(v);
      return text === undefined ? [] : [`- \`${v.jsonName}\`: ${text}`];
    });
    const head = this.describe?.(desc);
    const text = [head, lines.join("\n")].filter((t) => t !== undefined && t !== "").join("\n\n");
    if (text !== "") schema["description"] = text;
    return schema;
  }

  #addDescription(schema: JsonSchema, desc: DescMessage | DescField): void {
    const text = this.describe?.(desc);
    // Set last on a field, so that its own comment replaces its message type's: it says more in that place.
    if (text !== undefined && text !== "") schema["description"] = text;
  }
}

/** Whether the server prints the field even at its default: fields without presence, under alwaysEmitImplicit. */
function alwaysPrinted(field: DescField): boolean {
  if (field.fieldKind === "list" || field.fieldKind === "map") return true;
  if (field.fieldKind === "message" || field.oneof !== undefined) return false;
  // FeatureSet.FieldPresence.IMPLICIT
  return field.presence === 2;
}

/**
 * The members of a oneof exclude each other: each present member forbids the others. Written with
 * `dependentSchemas` rather than `not`/`required` so that validators in strict mode (Ajv) accept it.
 */
function oneofMembers(names: readonly string[]): JsonSchema {
  const dependent: JsonObject = {};
  for (const name of names) {
    dependent[name] = { properties: Object.fromEntries(names.filter((n) => n !== name).map((n) => [n, false])) };
  }
  return dependent;
}

function int64Schema(signed: boolean, direction: SchemaDirection): JsonSchema {
  const format = signed ? "int64" : "uint64";
  const pattern = signed ? SIGNED_DECIMAL : UNSIGNED_DECIMAL;
  // Printed as a decimal string (JavaScript numbers lose precision past 2^53); parsed from a string or a number.
  if (direction === "response") return { type: "string", format, pattern };
  // anyOf rather than a type list: validators in strict mode (Ajv) reject union types.
  return { anyOf: [{ type: "string", format, pattern }, { type: "integer", ...(signed ? {} : { minimum: 0 }) }] };
}

export function scalarSchema(scalar: ScalarType, direction: SchemaDirection): JsonSchema {
  switch (scalar) {
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return int64Schema(true, direction);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return int64Schema(false, direction);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32", ...INT32_RANGE };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "uint32", ...UINT32_RANGE };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      // Standard base64 with padding when printed; URL-safe and unpadded are also read.
      return { type: "string", format: "byte", contentEncoding: "base64" };
  }
}

/** Map keys are JSON object keys, so always strings; non-string keys are their decimal or boolean text. */
function mapKeySchema(key: ScalarType): JsonSchema {
  switch (key) {
    case ScalarType.BOOL:
      return { enum: ["true", "false"] };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { pattern: UNSIGNED_DECIMAL };
    default:
      return { pattern: SIGNED_DECIMAL };
  }
}

/** The JSON form of a well-known type that has one of its own, or undefined for any other message. */
function wellKnown(desc: DescMessage, direction: SchemaDirection): JsonSchema | undefined {
  switch (desc.typeName) {
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: {} };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time" };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: "Seconds with an `s` suffix, e.g. `1.5s`." };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated field paths in lowerCamel case." };
    case "google.protobuf.Any":
      return { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] };
    default: {
      const value = isWrapperDesc(desc) ? desc.fields[0] : undefined;
      return value?.fieldKind === "scalar" ? scalarSchema(value.scalar, direction) : undefined;
    }
  }
}
