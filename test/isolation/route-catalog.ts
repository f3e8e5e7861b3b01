// The routes under test, read from the served services' descriptors: every RPC with its google.api.http bindings and
// the request fields (nested ones too) that carry an id or a scope, so a route added to a service is picked up here.
import { ScalarType, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { ENGRAM_SERVICES } from "../../src/client/services.js";
import { bindingsOf, type HttpBinding } from "../../src/transport/gateway/http-rule.js";

/** A request field that names a record or a scope: `run_id`, `nodes.node_id` (a field of each item of `nodes`)... */
export interface IdField {
  /** Dotted proto field names from the request message; a list of messages is entered through its first item. */
  readonly path: string;
  /** The leaf field is a list of ids (`entry_ids`). */
  readonly list: boolean;
  /** The leaf is a 64-bit integer (core node ids): sent as a decimal string. */
  readonly integer: boolean;
}

export interface Route {
  /** `engram.v2.CoreService/GetNode`. */
  readonly rpc: string;
  /** `CoreService.GetNode`: the key of the mapping tables. */
  readonly name: string;
  readonly method: DescMethod;
  readonly bindings: readonly HttpBinding[];
  readonly idFields: readonly IdField[];
}

/**
 * Names that carry an id or a scope besides the `*_id` / `*_ids` / `id` pattern: record names chosen by the caller
 * (variables, concepts, projects, skills, scratchpad keys, snapshot paths, users), dedup keys, and memory lanes.
 */
const ID_LIKE_NAMES = new Set(["name", "key", "path", "username", "idempotency_key", "upsert_key", "lane", "lane_filter", "direct_lane"]);

/** Output-only fields of messages that requests also carry: the server ignores them on input, so nothing to probe. */
const OUTPUT_ONLY = new Set(["engram.v2.Provenance.key_id", "engram.v2.Provenance.agent_id"]);

function carriesId(field: DescField): boolean {
  if (OUTPUT_ONLY.has(`${field.parent.typeName}.${field.name}`)) return false;
  return field.name === "id" || /_ids?$/.test(field.name) || ID_LIKE_NAMES.has(field.name);
}

function isStringOrInteger(field: DescField): boolean {
  const scalar = field.fieldKind === "scalar" || (field.fieldKind === "list" && field.listKind === "scalar") ? field.scalar : undefined;
  return scalar !== undefined;
}

function nestedMessage(field: DescField): DescMessage | undefined {
  if (field.fieldKind === "message") return field.message;
  if (field.fieldKind === "list" && field.listKind === "message") return field.message;
  return undefined;
}

function idFieldsOf(message: DescMessage, prefix: string, seen: ReadonlySet<string>): IdField[] {
  const out: IdField[] = [];
  for (const field of message.fields) {
    const path = prefix === "" ? field.name : `${prefix}.${field.name}`;
    const nested = nestedMessage(field);
    if (nested !== undefined) {
      // google.api.HttpBody and recursive messages hold no ids of ours.
      if (!seen.has(nested.typeName) && nested.typeName.startsWith("engram.")) {
        out.push(...idFieldsOf(nested, path, new Set([...seen, nested.typeName])));
      }
      continue;
    }
    if (!carriesId(field) || !isStringOrInteger(field)) continue;
    const scalar = field.fieldKind === "scalar" || field.fieldKind === "list" ? field.scalar : undefined;
    out.push({ path, list: field.fieldKind === "list", integer: scalar !== undefined && scalar !== ScalarType.STRING });
  }
  return out;
}

/** Every RPC of every served service, in declaration order. */
export function routeCatalog(): Route[] {
  const routes: Route[] = [];
  for (const service of Object.values(ENGRAM_SERVICES)) {
    for (const method of service.methods) {
      const bindings = bindingsOf(method);
      const idFields = idFieldsOf(method.input, "", new Set([method.input.typeName]));
      // A path parameter is an id whatever its name.
      for (const binding of bindings) {
        for (const segment of binding.segments) {
          if ("variable" in segment && !idFields.some((f) => f.path === segment.variable)) {
            idFields.push({ path: segment.variable, list: false, integer: false });
          }
        }
      }
      routes.push({ rpc: `${service.typeName}/${method.name}`, name: `${service.name}.${method.name}`, method, bindings, idFields });
    }
  }
  return routes;
}
