// Turns an RPC request into the HTTP request of its google.api.http route: path parameters substituted from
// the request's fields, the body as the rule says, every other field as a query parameter.
import type { DescMethod, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { bindingsOf, type HttpBinding } from "../transport/gateway/http-rule.js";

export interface HttpCall {
  readonly binding: HttpBinding;
  readonly verb: string;
  readonly url: string;
  /** JSON text, or undefined when the route takes no body. */
  readonly body: string | undefined;
}

function variablesOf(binding: HttpBinding): string[] {
  return binding.segments.flatMap((s) => ("variable" in s ? [s.variable] : []));
}

/** A path parameter's text, or undefined when the field is unset (an empty string cannot fill a segment). */
function pathValue(value: JsonValue | undefined): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/** The first binding whose path parameters are all set; with none, the primary one (which then fails). */
function chooseBinding(method: DescMethod, full: JsonObject): HttpBinding {
  const bindings = bindingsOf(method);
  const [primary] = bindings;
  if (primary === undefined) {
    throw new ConnectError(`${method.parent.typeName}.${method.name} has no HTTP route; use the grpc transport`, Code.Unimplemented);
  }
  return bindings.find((b) => variablesOf(b).every((v) => pathValue(full[v]) !== undefined)) ?? primary;
}

function appendQuery(query: URLSearchParams, name: string, value: JsonValue, binding: HttpBinding): void {
  if (value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) appendQuery(query, name, item, binding);
    return;
  }
  if (typeof value === "object") {
    throw new ConnectError(
      `${name}: a message field cannot be sent as a query parameter of ${binding.verb} ${binding.template}`,
      Code.InvalidArgument,
    );
  }
  query.append(name, String(value));
}

/**
 * Builds the route call. `json` is the request in protobuf JSON with proto field names and implicit defaults
 * left out; `full` is the same with them emitted, so that a numeric path parameter of 0 still fills its segment.
 */
export function buildHttpCall(baseUrl: string, method: DescMethod, json: JsonObject, full: JsonObject): HttpCall {
  const binding = chooseBinding(method, full);
  const inPath = new Set<string>();
  const path = binding.segments
    .map((segment) => {
      if ("literal" in segment) return segment.literal;
      const value = pathValue(full[segment.variable]);
      if (value === undefined) {
        throw new ConnectError(`${segment.variable}: must not be empty (it is part of the path ${binding.template})`, Code.InvalidArgument);
      }
      inPath.add(segment.variable);
      return encodeURIComponent(value);
    })
    .join("/");

  let body: string | undefined;
  const query = new URLSearchParams();
  if (binding.body === "*") {
    body = JSON.stringify(json);
  } else {
    const bodyField = binding.body === "" ? undefined : json[binding.body];
    if (bodyField !== undefined) body = JSON.stringify(bodyField);
    for (const [name, value] of Object.entries(json)) {
      if (name === binding.body || inPath.has(name)) continue;
      appendQuery(query, name, value, binding);
    }
  }
  const search = query.size > 0 ? `?${query.toString()}` : "";
  return { binding, verb: binding.verb, url: `${baseUrl}/${path}${search}`, body };
}
