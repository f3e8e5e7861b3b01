// Reads google.api.http rules from method descriptors and matches request paths against their templates.
import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";

/** One HTTP binding of an RPC: `verb` + `template`, with where the body and the response body go. */
export interface HttpBinding {
  readonly verb: string;
  readonly template: string;
  readonly segments: readonly TemplateSegment[];
  /** `*` (whole body is the request), a field name, or "" (no body). */
  readonly body: string;
  /** Field of the response sent as the HTTP body; "" means the whole response. */
  readonly responseBody: string;
  readonly method: DescMethod;
}

export type TemplateSegment = { readonly literal: string } | { readonly variable: string };

export class HttpRuleError extends Error {}

function verbAndPath(rule: HttpRule): [string, string] | undefined {
  switch (rule.pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return [rule.pattern.case.toUpperCase(), rule.pattern.value];
    case "custom":
      return [rule.pattern.value.kind.toUpperCase(), rule.pattern.value.path];
    default:
      return undefined;
  }
}

/** Parses `/v2/core/node/{id}` into literal and variable segments. Only single-segment variables are used. */
export function parseTemplate(template: string): TemplateSegment[] {
  if (!template.startsWith("/")) throw new HttpRuleError(`path template must start with "/": ${template}`);
  return template
    .slice(1)
    .split("/")
    .map((part) => {
      const variable = /^\{([a-z_][a-z0-9_]*)\}$/.exec(part);
      if (variable) return { variable: variable[1] as string };
      if (part.includes("{") || part.includes("}") || part === "") {
        throw new HttpRuleError(`unsupported path template segment "${part}" in ${template}`);
      }
      return { literal: part };
    });
}

/** Every HTTP binding of a method: its rule and additional_bindings, in declaration order. */
export function bindingsOf(method: DescMethod): HttpBinding[] {
  if (!hasOption(method, http)) return [];
  const primary = getOption(method, http);
  const bindings: HttpBinding[] = [];
  for (const rule of [primary, ...primary.additionalBindings]) {
    const vp = verbAndPath(rule);
    if (vp === undefined) throw new HttpRuleError(`${method.parent.typeName}.${method.name}: http rule without a pattern`);
    const [verb, template] = vp;
    bindings.push({
      verb,
      template,
      segments: parseTemplate(template),
      body: rule.body,
      responseBody: rule.responseBody || primary.responseBody,
      method,
    });
  }
  return bindings;
}

/** `POST /v2/control/remember` for a method with an http rule, else its RPC path. Used as the route label. */
export function routeLabelOf(method: DescMethod): string {
  const [first] = bindingsOf(method);
  return first ? `${first.verb} ${first.template}` : `/${method.parent.typeName}/${method.name}`;
}

export interface RouteMatch {
  readonly binding: HttpBinding;
  readonly pathParams: Readonly<Record<string, string>>;
}

/**
 * Matches request paths to bindings. Among templates that match, the one with a literal where another has a
 * variable wins, segment by segment from the left, so `/v2/core/session/create` beats `/v2/core/session/{id}`.
 */
export class RouteTable {
  readonly #byLength = new Map<number, HttpBinding[]>();

  constructor(bindings: Iterable<HttpBinding>) {
    for (const binding of bindings) {
      const list = this.#byLength.get(binding.segments.length) ?? [];
      list.push(binding);
      this.#byLength.set(binding.segments.length, list);
    }
    for (const list of this.#byLength.values()) list.sort(bySpecificity);
  }

  /** The binding for a verb and a decoded path, `"method_not_allowed"` when only other verbs match, or undefined. */
  match(verb: string, path: string): RouteMatch | "method_not_allowed" | undefined {
    const parts = path.replace(/^\/+/, "").replace(/\/+$/, "").split("/");
    const candidates = this.#byLength.get(parts.length) ?? [];
    let otherVerb = false;
    for (const binding of candidates) {
      const params = matchSegments(binding.segments, parts);
      if (params === undefined) continue;
      if (binding.verb === verb) return { binding, pathParams: params };
      otherVerb = true;
    }
    return otherVerb ? "method_not_allowed" : undefined;
  }
}

function matchSegments(segments: readonly TemplateSegment[], parts: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as TemplateSegment;
    const part = parts[i] as string;
    if ("literal" in segment) {
      if (segment.literal !== part) return undefined;
    } else {
      if (part === "") return undefined;
      let decoded: string;
      try {
        decoded = decodeURIComponent(part);
      } catch {
        return undefined;
      }
      params[segment.variable] = decoded;
    }
  }
  return params;
}

function bySpecificity(a: HttpBinding, b: HttpBinding): number {
  for (let i = 0; i < a.segments.length; i++) {
    const aLiteral = "literal" in (a.segments[i] as TemplateSegment);
    const bLiteral = "literal" in (b.segments[i] as TemplateSegment);
    if (aLiteral !== bLiteral) return aLiteral ? -1 : 1;
  }
  return 0;
}
