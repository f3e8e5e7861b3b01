// Builds the OpenAPI 3.1 document of the HTTP/JSON gateway from the services' descriptors and the same
// google.api.http bindings the gateway routes by, so that the document cannot describe routes the server lacks.
import type { DescField, DescMessage, DescMethod, DescService, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { bindingsOf, type HttpBinding } from "../transport/gateway/http-rule.js";
import { isRemovedRpc } from "../transport/removed-rpcs.js";
import { PUBLIC_SERVICES } from "../transport/interceptors/auth.js";
import { SchemaComponents, scalarSchema, type JsonSchema } from "../protocol/message-json-schema.js";
import type { CommentedDesc } from "../protocol/proto-comments.js";
import { ERROR_SCHEMA_NAME, errorResponseComponents, errorResponseRefs, errorSchema, type ErrorResponseName } from "./error-responses.js";
import { COST_HEADER, ZERO_COST, costHeaderValue } from "../platform/cost-meter.js";

export const SECURITY_SCHEME_NAME = "apiKey";

export interface OpenApiOptions {
  /** The services served over HTTP/JSON; their methods without an http rule are left out. */
  readonly services: readonly DescService[];
  /** The API version the document states (the package version). */
  readonly version: string;
  /** Proto comments; without it the document has no descriptions beyond its own. */
  readonly describe?: (desc: CommentedDesc) => string | undefined;
}

/**
 * Statuses at which a route answers with its response message rather than the error body. Only the readiness probe
 * does: while start-up work runs it answers 503 with `{"status":"not_ready",…}` (services/health/health-service.ts).
 */
const MESSAGE_STATUSES: Readonly<Record<string, readonly string[]>> = { "engram.v2.HealthService/Readyz": ["503"] };

const INTRODUCTION = [
  "Engram's HTTP/JSON API: every route is an RPC of the `engram.v2` services, also served over gRPC and Connect on the same port.",
  "",
  "- **Authentication**: `Authorization: Bearer <API key>` on every route except the probes (`/livez`, `/readyz`, `/v2/core/health`, `/metrics`) and this document.",
  "- **JSON**: the proto3 JSON mapping. Responses use the proto field names (snake_case) and always include fields that have no presence, at their default value when unset; 64-bit integers are decimal strings. Requests may also use lowerCamel names and send 64-bit integers as numbers; an unknown field is refused with 400.",
  "- **Errors**: every error answer has the body `Error` (`code`, `message`, `details`); the HTTP status follows from `code`.",
  "- **Streams**: server-streaming routes answer `text/event-stream`, one `data:` line of JSON per message.",
].join("\n");

/** The `components.headers` name of the provider cost header. */
const COST_HEADER_NAME = "EngramCost";

/** The cost header as the cost interceptor writes it: its pattern is the writer's own answer for no cost, digits free. */
function costHeader(): JsonObject {
  const none = costHeaderValue(ZERO_COST);
  return {
    description:
      "What the call spent on external providers (the LLM and the embeddings endpoint), as an RFC 8941 dictionary of integers, " +
      "every member always present: calls, input and output tokens, and milliseconds spent waiting. All zero when no provider " +
      "was called (the embedded embedder and no LLM). Error answers of these routes carry it too once the key was accepted " +
      '(not 401, nor a 429 of the per-key rate limit). See README, "What each call cost".',
    schema: { type: "string", pattern: `^${none.replace(/=0/g, "=\\d+")}$`, examples: [none] },
  };
}

/** The first sentence of a comment, for an operation's summary. */
function firstSentence(text: string): string {
  const paragraph = text.split(/\n\s*\n/, 1)[0] ?? text;
  const flat = paragraph.replace(/\s*\n\s*/g, " ");
  const end = /[.!?](\s|$)/.exec(flat);
  return end === null ? flat : flat.slice(0, end.index + 1);
}

function rpcName(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** `{x}` segments become OpenAPI path parameters as they are; the gateway's templates have no `{x=**}` forms. */
function openApiPath(binding: HttpBinding): string {
  return `/${binding.segments.map((s) => ("literal" in s ? s.literal : `{${s.variable}}`)).join("/")}`;
}

/** The field a path variable or query parameter sets, found as the gateway's request-json.ts finds it. */
function fieldNamed(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

class DocumentBuilder {
  readonly #components: SchemaComponents;
  readonly #describe: (desc: CommentedDesc) => string | undefined;
  readonly #paths: Record<string, JsonObject> = {};
  readonly #operationIds = new Set<string>();

  constructor(services: readonly DescService[], describe: (desc: CommentedDesc) => string | undefined) {
    this.#describe = describe;
    // A message sent in responses keeps its plain name there; its request form, when it is also read, gets `.Input`.
    const inResponses = new Set<string>();
    for (const service of services) for (const method of service.methods) collectMessages(method.output, inResponses);
    this.#components = new SchemaComponents({
      describe: (desc) => describe(desc),
      name: (desc, direction) => (direction === "request" && inResponses.has(desc.typeName) ? `${desc.typeName}.Input` : desc.typeName),
    });
  }

  addBinding(binding: HttpBinding, index: number): void {
    const path = openApiPath(binding);
    const item = (this.#paths[path] ??= {});
    const verb = binding.verb.toLowerCase();
    if (verb in item) throw new Error(`two bindings for ${binding.verb} ${path}`);
    item[verb] = this.#operation(binding, index);
  }

  addOperation(path: string, verb: string, operation: JsonObject): void {
    (this.#paths[path] ??= {})[verb] = operation;
  }

  get paths(): JsonObject {
    return this.#paths;
  }

  get schemas(): JsonObject {
    return { ...this.#components.schemas, [ERROR_SCHEMA_NAME]: errorSchema() };
  }

  #operation(binding: HttpBinding, index: number): JsonObject {
    const method = binding.method;
    const comment = this.#describe(method);
    const operation: JsonObject = { operationId: this.#operationId(method, index), tags: [method.parent.name] };
    if (comment !== undefined) {
      operation["summary"] = firstSentence(comment);
      operation["description"] = comment;
    }
    const removed = isRemovedRpc(method);
    if (method.deprecated || removed) operation["deprecated"] = true;
    const isPublic = PUBLIC_SERVICES.has(method.parent.typeName);
    if (isPublic) operation["security"] = [];
    const parameters = removed ? [] : this.#parameters(binding);
    if (parameters.length > 0) operation["parameters"] = parameters;
    const readsBody = binding.verb !== "GET" && binding.verb !== "DELETE";
    if (readsBody && !removed && binding.body !== "") operation["requestBody"] = this.#requestBody(binding);
    const errors: ErrorResponseName[] = removed
      ? ["Gone"]
      : isPublic
        ? ["BadRequest"]
        : ["BadRequest", "PermissionDenied", "NotFound", "Conflict", "TooManyRequests"];
    if (!isPublic) errors.push("Unauthenticated");
    if (readsBody && !removed) errors.push("PayloadTooLarge");
    errors.push("ServerError");
    // Every authenticated unary call answers what it spent (transport/interceptors/cost.ts); streams and probes do not.
    const metered = !isPublic && method.methodKind === "unary";
    const success = metered ? { ...this.#success(binding), headers: { [COST_HEADER]: { $ref: `#/components/headers/${COST_HEADER_NAME}` } } } : this.#success(binding);
    const responses: JsonObject = { ...(removed ? {} : { "200": success }), ...errorResponseRefs(errors) };
    for (const status of MESSAGE_STATUSES[rpcName(method)] ?? []) responses[status] = success;
    operation["responses"] = sortedByStatus(responses);
    return operation;
  }

  #operationId(method: DescMethod, index: number): string {
    const base = `${method.parent.name}_${method.name}`;
    const id = index === 0 ? base : `${base}_${index + 1}`;
    if (this.#operationIds.has(id)) throw new Error(`duplicate operationId ${id}`);
    this.#operationIds.add(id);
    return id;
  }

  /** Path variables, then (unless the whole body is the request) every other field the query may set. */
  #parameters(binding: HttpBinding): JsonValue[] {
    const input = binding.method.input;
    const parameters: JsonValue[] = [];
    const inPath = new Set<string>();
    for (const segment of binding.segments) {
      if ("literal" in segment) continue;
      const field = fieldNamed(input, segment.variable);
      if (field === undefined) throw new Error(`${rpcName(binding.method)}: path variable {${segment.variable}} names no field`);
      inPath.add(field.name);
      parameters.push({ name: segment.variable, in: "path", required: true, ...this.#parameterSchema(field) });
    }
    if (binding.body === "*") return parameters;
    for (const field of input.fields) {
      if (inPath.has(field.name) || field.name === binding.body) continue;
      const schema = this.#parameterSchema(field);
      // Message and map fields cannot be set from a query string; the gateway refuses them.
      if (schema === undefined) continue;
      parameters.push({ name: field.name, in: "query", ...schema, ...(field.fieldKind === "list" ? { style: "form", explode: true } : {}) });
    }
    return parameters;
  }

  /** `schema` and `description` of a parameter, or undefined when the field cannot come from a URL. */
  #parameterSchema(field: DescField): JsonObject | undefined {
    let schema: JsonSchema;
    if (field.fieldKind === "scalar") schema = scalarSchema(field.scalar, "request");
    else if (field.fieldKind === "enum") schema = { type: "string", enum: field.enum.values.map((v) => v.jsonName) };
    else if (field.fieldKind === "list" && field.listKind === "scalar") schema = { type: "array", items: scalarSchema(field.scalar, "request") };
    else if (field.fieldKind === "list" && field.listKind === "enum") schema = { type: "array", items: { type: "string", enum: field.enum.values.map((v) => v.jsonName) } };
    else return undefined;
    const description = this.#describe(field);
    return { ...(description === undefined ? {} : { description }), schema };
  }

  #requestBody(binding: HttpBinding): JsonObject {
    const input = binding.method.input;
    let schema: JsonSchema;
    if (binding.body === "*") {
      schema = this.#components.ref(input, "request");
    } else {
      const field = fieldNamed(input, binding.body);
      if (field?.fieldKind !== "message") throw new Error(`${rpcName(binding.method)}: body "${binding.body}" is not a message field`);
      schema = this.#components.ref(field.message, "request");
    }
    return { description: "The request as JSON; an empty body is an empty request.", content: { "application/json": { schema } } };
  }

  #success(binding: HttpBinding): JsonObject {
    const method = binding.method;
    const output = method.output;
    if (method.methodKind === "server_streaming") {
      return {
        description:
          "A Server-Sent Events stream: each event is one `data:` line holding one response message as JSON " +
          "(`x-sse-data` gives its schema). An error after the stream opened arrives as a last event " +
          '`{"type":"error","code":…,"message":…}`; one before it opened is a plain error answer.',
        content: { "text/event-stream": { schema: { type: "string" }, "x-sse-data": this.#components.ref(output, "response") } },
      };
    }
    const description = this.#describe(output) ?? `${output.name} as JSON.`;
    if (binding.responseBody === "") {
      return { description, content: { "application/json": { schema: this.#components.ref(output, "response") } } };
    }
    const field = output.field[binding.responseBody];
    if (field?.fieldKind !== "message") throw new Error(`${rpcName(method)}: response_body "${binding.responseBody}" is not a message field`);
    if (field.message.typeName === "google.api.HttpBody") {
      // The gateway sends an HttpBody's bytes as they are, under its content type: text for every route today.
      return { description: this.#describe(field) ?? description, content: { "text/plain": { schema: { type: "string" } } } };
    }
    // An unset message field is sent as `null`.
    const schema = { anyOf: [this.#components.ref(field.message, "response"), { type: "null" }] };
    return { description: this.#describe(field) ?? description, content: { "application/json": { schema } } };
  }
}

/** Every message reachable from `message` through its fields, by type name. */
function collectMessages(message: DescMessage, into: Set<string>): void {
  if (into.has(message.typeName)) return;
  into.add(message.typeName);
  for (const field of message.fields) if (field.message !== undefined) collectMessages(field.message, into);
}

/** Numeric statuses in order, then ranges such as 5XX. */
function sortedByStatus(responses: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

/** The operation of `GET /openapi.json` itself, which no proto declares. */
function documentOperation(): JsonObject {
  return {
    operationId: "OpenApi_GetDocument",
    tags: ["OpenApi"],
    summary: "This OpenAPI 3.1 document.",
    description: "The document describing every HTTP/JSON route, generated at build time from the proto contract. Served without an API key.",
    security: [],
    responses: {
      "200": { description: "The OpenAPI document.", content: { "application/json": { schema: { type: "object" } } } },
      ...errorResponseRefs(["MethodNotAllowed"]),
    },
  };
}

export function buildOpenApiDocument(options: OpenApiOptions): JsonObject {
  const describe = options.describe ?? (() => undefined);
  const builder = new DocumentBuilder(options.services, describe);
  const tags: JsonValue[] = [];
  for (const service of options.services) {
    const bindings = service.methods.flatMap((m) => bindingsOf(m).map((b, i) => [b, i] as const));
    if (bindings.length === 0) continue;
    const description = describe(service);
    tags.push({ name: service.name, ...(description === undefined ? {} : { description }) });
    for (const [binding, index] of bindings) builder.addBinding(binding, index);
  }
  tags.push({ name: "OpenApi", description: "The API description itself." });
  builder.addOperation("/openapi.json", "get", documentOperation());
  return {
    openapi: "3.1.0",
    info: { title: "Engram", version: options.version, description: INTRODUCTION },
    tags,
    security: [{ [SECURITY_SCHEME_NAME]: [] }],
    paths: builder.paths,
    components: {
      schemas: builder.schemas,
      responses: errorResponseComponents(),
      headers: { [COST_HEADER_NAME]: costHeader() },
      securitySchemes: {
        [SECURITY_SCHEME_NAME]: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "Engram API key",
          description: "`Authorization: Bearer <API key>`. An admin creates users and their keys with `POST /v2/core/auth/users`.",
        },
      },
    },
  };
}
