import { describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  create,
  createFileRegistry,
  fromJson,
  toJson,
  type DescMessage,
  type JsonObject,
  type JsonValue,
} from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  type FieldDescriptorProto,
} from "@bufbuild/protobuf/wkt";
import { protoCamelCase } from "@bufbuild/protobuf/reflect";
import { inlineMessageSchema, SchemaComponents, type JsonSchema } from "../../src/protocol/message-json-schema.js";
import { RememberRequestSchema } from "../../gen/engram/v2/memory_service_pb.js";

const OPT = Label.OPTIONAL;
const REP = Label.REPEATED;
type FieldInit = Partial<Omit<FieldDescriptorProto, "$typeName">>;
const f = (name: string, number: number, type: Type, more: FieldInit = {}): FieldInit => ({ name, number, type, label: OPT, jsonName: protoCamelCase(name), ...more });

// A proto3 file with every shape the JSON mapping treats specially.
const file = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "t.proto",
    package: "t",
    syntax: "proto3",
    dependency: ["google/protobuf/struct.proto", "google/protobuf/timestamp.proto", "google/protobuf/duration.proto", "google/protobuf/wrappers.proto"],
    enumType: [{ name: "Color", value: [{ name: "COLOR_UNSPECIFIED", number: 0 }, { name: "COLOR_RED", number: 1 }] }],
    messageType: [
      {
        name: "Kitchen",
        field: [
          f("big_count", 1, Type.INT64),
          f("id", 2, Type.UINT64),
          f("small", 3, Type.INT32),
          f("ratio", 4, Type.DOUBLE),
          f("flag", 5, Type.BOOL),
          f("blob", 6, Type.BYTES),
          f("color", 7, Type.ENUM, { typeName: ".t.Color" }),
          f("tags", 8, Type.STRING, { label: REP }),
          f("labels", 9, Type.MESSAGE, { typeName: ".t.Kitchen.LabelsEntry", label: REP }),
          f("by_id", 10, Type.MESSAGE, { typeName: ".t.Kitchen.ByIdEntry", label: REP }),
          f("text", 11, Type.STRING, { oneofIndex: 0 }),
          f("number", 12, Type.INT32, { oneofIndex: 0 }),
          f("maybe", 13, Type.STRING, { oneofIndex: 1, proto3Optional: true }),
          f("attrs", 14, Type.MESSAGE, { typeName: ".google.protobuf.Struct" }),
          f("any_value", 15, Type.MESSAGE, { typeName: ".google.protobuf.Value" }),
          f("at", 16, Type.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
          f("took", 17, Type.MESSAGE, { typeName: ".google.protobuf.Duration" }),
          f("limit", 18, Type.MESSAGE, { typeName: ".google.protobuf.Int64Value" }),
          f("child", 19, Type.MESSAGE, { typeName: ".t.Kitchen" }),
          f("children", 20, Type.MESSAGE, { typeName: ".t.Kitchen", label: REP }),
        ],
        oneofDecl: [{ name: "choice" }, { name: "_maybe" }],
        nestedType: [
          { name: "LabelsEntry", options: { mapEntry: true }, field: [f("key", 1, Type.STRING), f("value", 2, Type.STRING)] },
          { name: "ByIdEntry", options: { mapEntry: true }, field: [f("key", 1, Type.UINT64), f("value", 2, Type.MESSAGE, { typeName: ".t.Kitchen" })] },
        ],
      },
    ],
  }),
  (name) =>
    ({
      "google/protobuf/struct.proto": file_google_protobuf_struct,
      "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
      "google/protobuf/duration.proto": file_google_protobuf_duration,
      "google/protobuf/wrappers.proto": file_google_protobuf_wrappers,
    })[name],
);
const Kitchen = file.getMessage("t.Kitchen") as DescMessage;

// The server's JSON writer settings (src/transport/rpc-router.ts).
const SERVER_JSON = { useProtoFieldName: true, alwaysEmitImplicit: true } as const;

function ajv(): Ajv2020 {
  const formats = { int64: true, uint64: true, int32: true, uint32: true, double: true, float: true, byte: true, "date-time": true } as const;
  return new Ajv2020({ strict: true, formats });
}

function props(schema: JsonSchema): JsonObject {
  return schema["properties"] as JsonObject;
}

describe("response schemas", () => {
  const schema = inlineMessageSchema(Kitchen, { direction: "response" });

  it("follow the proto3 JSON mapping as the server prints it", () => {
    const p = props(schema);
    expect(p["big_count"]).toMatchObject({ type: "string", pattern: "^-?[0-9]+$" });
    expect(p["id"]).toMatchObject({ type: "string", pattern: "^[0-9]+$" });
    expect(p["small"]).toMatchObject({ type: "integer" });
    expect(p["blob"]).toMatchObject({ type: "string", contentEncoding: "base64" });
    expect(p["color"]).toEqual({ type: "string", enum: ["COLOR_UNSPECIFIED", "COLOR_RED"] });
    expect(p["labels"]).toEqual({ type: "object", additionalProperties: { type: "string" } });
    expect(p["by_id"]).toMatchObject({ propertyNames: { pattern: "^[0-9]+$" } });
    expect(p["attrs"]).toEqual({ type: "object", additionalProperties: {} });
    expect(p["any_value"]).toEqual({});
    expect(p["at"]).toEqual({ type: "string", format: "date-time" });
    expect(p["limit"]).toMatchObject({ type: "string", format: "int64" });
    expect(schema["required"]).toEqual(["big_count", "id", "small", "ratio", "flag", "blob", "color", "tags", "labels", "by_id", "children"]);
    expect(schema["additionalProperties"]).toBe(false);
  });

  it("inline nested messages, and a message reached again inside itself as a plain object", () => {
    expect(props(schema)["child"]).toEqual({ type: "object" });
    expect(props(schema)["children"]).toEqual({ type: "array", items: { type: "object" } });
    const byId = (props(schema)["by_id"] as JsonSchema)["additionalProperties"] as JsonSchema;
    expect(byId).toEqual({ type: "object" });
  });

  it("accept what the server writes, defaults and all, and reject a second oneof member", () => {
    const validate = ajv().compile(schema);
    const empty = toJson(Kitchen, create(Kitchen), SERVER_JSON);
    expect(validate(empty), JSON.stringify(validate.errors)).toBe(true);
    const full: JsonValue = {
      big_count: "-9007199254740993", id: "18446744073709551615", small: -3, ratio: 0.5, flag: true, blob: "AAE=", color: "COLOR_RED",
      tags: ["a"], labels: { k: "v" }, by_id: { "7": { small: 1 } }, number: 4, maybe: "", attrs: { x: [1, { y: null }] },
      any_value: "s", at: "2024-01-02T03:04:05Z", took: "1.5s", limit: "12", child: { child: { text: "deep" } }, children: [{}],
    };
    const printed = toJson(Kitchen, fromJson(Kitchen, full), SERVER_JSON);
    expect(validate(printed), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...(printed as JsonObject), text: "and a number" })).toBe(false);
    expect(validate({ ...(printed as JsonObject), big_count: 3 })).toBe(false);
    expect(validate({ ...(printed as JsonObject), bigCount: "3" })).toBe(false);
  });
});

describe("request schemas", () => {
  const schema = inlineMessageSchema(Kitchen, { direction: "request" });
  const validate = ajv().compile(schema);

  it("accept what the server parses: int64 as numbers, enum numbers, lowerCamel names, nothing required", () => {
    const input = { big_count: 12, id: "5", color: 1, bigCount: "7", byId: { "3": {} }, tags: ["x"] };
    expect(validate({}), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(input), JSON.stringify(validate.errors)).toBe(true);
    expect(() => fromJson(Kitchen, { big_count: 12, id: "5", color: 1, byId: { "3": {} } })).not.toThrow();
  });

  it("reject what the server rejects", () => {
    expect(validate({ nope: 1 })).toBe(false);
    expect(() => fromJson(Kitchen, { nope: 1 })).toThrow();
    expect(validate({ color: "COLOR_BLUE" })).toBe(false);
    expect(validate({ id: "-1" })).toBe(false);
    expect(validate({ small: "x" })).toBe(false);
  });
});

describe("components", () => {
  it("name messages once per direction and refer to them, recursion included", () => {
    const components = new SchemaComponents({ describe: (d) => (d.kind === "field" && d.name === "child" ? "The child." : undefined) });
    expect(components.ref(Kitchen, "response")).toEqual({ $ref: "#/components/schemas/t.Kitchen" });
    expect(components.ref(Kitchen, "request")).toEqual({ $ref: "#/components/schemas/t.Kitchen.Input" });
    const kitchen = components.schemas["t.Kitchen"] as JsonSchema;
    expect(props(kitchen)["child"]).toEqual({ $ref: "#/components/schemas/t.Kitchen", description: "The child." });
    expect(props(kitchen)["children"]).toMatchObject({ items: { $ref: "#/components/schemas/t.Kitchen" } });
    expect(Object.keys(components.schemas).sort()).toEqual(["t.Kitchen", "t.Kitchen.Input"]);
    // The components validate real output when refs resolve against them.
    const validator = ajv().addKeyword("components");
    validator.addSchema({ $id: "urn:engram:c", components: { schemas: components.schemas } } as JsonObject);
    const validate = validator.compile({ $ref: "urn:engram:c#/components/schemas/t.Kitchen" });
    const printed = toJson(Kitchen, fromJson(Kitchen, { child: { children: [{ id: "1" }] } }), SERVER_JSON);
    expect(validate(printed), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...(printed as JsonObject), child: { id: 1 } })).toBe(false);
  });

  it("carry descriptions from the callback and inline well-known types", () => {
    const components = new SchemaComponents({ describe: (d) => (d.kind === "message" ? `About ${d.name}.` : undefined) });
    components.ref(RememberRequestSchema, "request");
    const remember = components.schemas["engram.v2.RememberRequest.Input"] as JsonSchema;
    expect(remember["description"]).toBe("About RememberRequest.");
    expect(props(remember)["session_id"]).toEqual({ type: "string" });
    expect(components.ref(file.getMessage("google.protobuf.Timestamp") as DescMessage, "response")).toEqual({ type: "string", format: "date-time" });
  });
});
