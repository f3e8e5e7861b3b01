// Request messages from descriptors: a well-typed message with plausible values (real ids from the pool, words the
// field's comment names), then one mutation of it — boundary values, wrong JSON types, unknown fields, deep nesting,
// huge arrays or strings.
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import type { IdPool } from "./id-pool.js";
import { isObject, RawJson, type FuzzJson, type FuzzObject } from "./json-text.js";
import type { Rng } from "./prng.js";
import { badJsonText, boundaryScalar, boundaryString, deepJsonText, invalidUtf8Literal, mistyped } from "./values.js";
import type { Vocabulary } from "./vocabulary.js";

export interface GenContext {
  readonly rng: Rng;
  readonly pool: IdPool;
  readonly vocabulary: Vocabulary;
  /** The server's SERVICE_MAX_REQUEST_BYTES: big values stay under it, except those meant to go over. */
  readonly maxBytes: number;
  /** The core vector index's dimension, so generated vectors are accepted. */
  readonly vectorDimension: number;
}

export type Mutation =
  | "valid" | "empty" | "boundary" | "mistyped" | "null" | "unknown_field" | "deep" | "huge_array" | "huge_string" | "invalid_utf8";

const WORDS = ["deploy", "cache", "migration", "failed", "retry", "the", "database", "agent", "lesson", "timeout", "Ошибка", "数据库", "🚀", "mañana"];
const ID_FIELD = /(^|_)(id|username|token)$/;
const JSON_FIELD = /(_json|^schema|_schema)$/;
const TIME_STRING = /(_at|_after|_before|^ts|_time)$/;

function sentence(rng: Rng, maxWords = 12): string {
  return Array.from({ length: rng.between(1, maxWords) }, () => rng.pick(WORDS)).join(" ");
}

function plausibleJsonText(rng: Rng): string {
  // Mostly objects: most *_json fields take one.
  if (rng.chance(0.8)) return rng.pick(['{"k":"v","n":1}', "{}", '{"tags":["a","b"],"nested":{"x":true}}', '{"type":"object","properties":{"q":{"type":"string"}}}']);
  return rng.pick(["[1,2,3]", '"text"', "42", "null", "true"]);
}

function plausibleString(field: DescField, ctx: GenContext): string {
  const { rng } = ctx;
  const words = ctx.vocabulary.get(`${field.parent.typeName}.${field.name}`)?.words ?? [];
  if (words.length > 0 && rng.chance(0.75)) return rng.pick(words);
  if (ID_FIELD.test(field.name)) {
    const seen = ctx.pool.draw(rng, field.name);
    if (seen !== undefined && rng.chance(0.85)) return String(seen);
    return `fz-${rng.pick(["run", "a", "b", "x"])}-${rng.int(6)}`;
  }
  if (JSON_FIELD.test(field.name)) return plausibleJsonText(rng);
  if (TIME_STRING.test(field.name)) return new Date(Date.UTC(2025, 0, 1) + rng.int(400) * 86_400_000).toISOString();
  if (/content|query|text|description|instructions|rationale|payload|hint|prompt/.test(field.name)) return sentence(rng, 30);
  return rng.chance(0.5) ? rng.pick(WORDS) : `fz-${rng.int(8)}`;
}

function plausibleScalar(field: DescField, scalar: ScalarType, ctx: GenContext): FuzzJson {
  const { rng } = ctx;
  switch (scalar) {
    case ScalarType.STRING:
      return plausibleString(field, ctx);
    case ScalarType.BYTES:
      return Buffer.from(rng.bytes(rng.int(16))).toString("base64");
    case ScalarType.BOOL:
      return rng.chance(0.5);
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      if (/signal/.test(field.name)) return Math.round((rng.next() * 2 - 1) * 100) / 100;
      if (/temperature/.test(field.name)) return Math.round(rng.next() * 200) / 100;
      return Math.round(rng.next() * 100) / 100;
    default: {
      if (/time|timestamp/.test(field.name)) return 1_735_689_600 + rng.int(40_000_000);
      if (ID_FIELD.test(field.name)) {
        const seen = ctx.pool.draw(rng, field.name, true);
        if (seen !== undefined) return scalar === ScalarType.INT64 || scalar === ScalarType.UINT64 ? String(seen) : Number(seen);
      }
      return rng.int(rng.chance(0.8) ? 20 : 1000);
    }
  }
}

function vector(ctx: GenContext): FuzzJson[] {
  const { rng } = ctx;
  const length = rng.chance(0.9) ? ctx.vectorDimension : rng.pick([0, 1, ctx.vectorDimension + 1, 3]);
  return Array.from({ length }, () => Math.round((rng.next() * 2 - 1) * 1000) / 1000);
}

function plausibleField(field: DescField, ctx: GenContext, depth: number): FuzzJson {
  const { rng } = ctx;
  switch (field.fieldKind) {
    case "scalar":
      return plausibleScalar(field, field.scalar, ctx);
    case "enum":
      return rng.pick(field.enum.values).name;
    case "message":
      return wellTyped(field.message, ctx, depth + 1);
    case "list": {
      if (field.listKind === "scalar" && (field.scalar === ScalarType.FLOAT || field.scalar === ScalarType.DOUBLE)) return vector(ctx);
      const required = ctx.vocabulary.get(`${field.parent.typeName}.${field.name}`)?.required === true;
      const length = (required ? 1 : 0) + rng.int(depth > 1 ? 2 : 4);
      return Array.from({ length }, (): FuzzJson => {
        if (field.listKind === "message") return wellTyped(field.message, ctx, depth + 1);
        if (field.listKind === "enum") return rng.pick(field.enum.values).name;
        return plausibleScalar(field, field.scalar, ctx);
      });
    }
    case "map": {
      const map: FuzzObject = {};
      for (let i = rng.int(4); i > 0; i--) map[rng.pick(["k", "env", "tag", String(i)])] = rng.pick(WORDS);
      return map;
    }
  }
}

/** Names a record's id may go by in a request: GetNode's `id` is a node's `node_id`. */
const ALIASES: Readonly<Record<string, readonly string[]>> = { id: ["id", "node_id"] };

/** The field's value from an answer's record of ids, typed for the field, if the record has one. */
function fromRecord(field: DescField, record: Readonly<Record<string, string | number>>): FuzzJson | undefined {
  if (field.fieldKind !== "scalar") return undefined;
  const value = (ALIASES[field.name] ?? [field.name]).map((name) => record[name]).find((v) => v !== undefined);
  if (value === undefined) return undefined;
  if (field.scalar === ScalarType.STRING) return String(value);
  if (!/^\d+$/.test(String(value))) return undefined;
  return field.scalar === ScalarType.INT64 || field.scalar === ScalarType.UINT64 ? String(value) : Number(value);
}

/** A message with most of its fields set to values of the right type that the server may well accept. */
export function wellTyped(message: DescMessage, ctx: GenContext, depth = 0): FuzzObject {
  const json: FuzzObject = {};
  // Ids that belong together (a project and its agent, a run and its node) come from one answer's record.
  const record = ctx.rng.chance(0.6) ? ctx.pool.record(ctx.rng, message.fields.flatMap((f) => ALIASES[f.name] ?? [f.name])) : undefined;
  for (const field of message.fields) {
    // Required fields are nearly always set and optional ones less often, so more requests pass validation.
    const note = ctx.vocabulary.get(`${message.typeName}.${field.name}`);
    const recorded = record === undefined ? undefined : fromRecord(field, record);
    const keep = recorded !== undefined || note?.required ? 0.97 : note?.optional ? 0.35 : ID_FIELD.test(field.name) ? 0.6 : 0.55;
    if (depth > 3 || !ctx.rng.chance(keep)) continue;
    json[ctx.rng.chance(0.85) ? field.name : field.jsonName] = recorded ?? plausibleField(field, ctx, depth);
  }
  return json;
}

/** A place a mutation can write: one field of one message object inside the request. */
interface Site {
  readonly object: FuzzObject;
  readonly field: DescField;
}

function sitesOf(json: FuzzObject, message: DescMessage, out: Site[] = [], depth = 0): Site[] {
  for (const field of message.fields) {
    out.push({ object: json, field });
    const value = json[field.name] ?? json[field.jsonName];
    if (depth < 4 && field.fieldKind === "message" && isObject(value)) sitesOf(value, field.message, out, depth + 1);
    if (depth < 4 && field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      for (const item of value) if (isObject(item)) sitesOf(item, field.message, out, depth + 1);
    }
  }
  return out;
}

function setField(site: Site, value: FuzzJson): void {
  delete site.object[site.field.jsonName];
  site.object[site.field.name] = value;
}

function boundaryFor(field: DescField, ctx: GenContext): FuzzJson {
  const { rng } = ctx;
  const budget = ctx.maxBytes / 4;
  switch (field.fieldKind) {
    case "scalar":
      return boundaryScalar(rng, field.scalar, budget);
    case "enum":
      return rng.pick(["", "UNKNOWN", -1, 999, 2147483648]);
    case "message":
      return rng.pick<FuzzJson>([{}, null]);
    case "map":
      return rng.pick<FuzzJson>([{}, { "": "" }, new RawJson('{"__proto__":"x"}'), { constructor: "y", toString: "z" }, { [boundaryString(rng, budget)]: boundaryString(rng, budget) }]);
    case "list": {
      if (rng.chance(0.3)) return [];
      const item = (): FuzzJson =>
        field.listKind === "scalar" ? boundaryScalar(rng, field.scalar, budget / 8) : field.listKind === "message" ? rng.pick<FuzzJson>([{}, null]) : "";
      return Array.from({ length: rng.between(1, 3) }, item);
    }
  }
}

/** Enough copies of a small item to make a body of about `bytes`. */
function hugeArray(field: DescField, ctx: GenContext, bytes: number): FuzzJson[] {
  const { rng } = ctx;
  let item: FuzzJson;
  if (field.fieldKind === "list" && field.listKind === "message") item = wellTyped(field.message, { ...ctx, rng }, 3);
  else if (field.fieldKind === "list" && field.listKind === "scalar" && field.scalar !== ScalarType.STRING && field.scalar !== ScalarType.BYTES) item = 1;
  else item = rng.pick(["a", "", "数"]);
  const itemBytes = Buffer.byteLength(JSON.stringify(item)) + 1;
  const count = Math.max(1, Math.floor(bytes / itemBytes));
  return Array.from({ length: Math.min(count, 2_000_000) }, () => item);
}

/** Applies `mutation` to a well-typed request, in place; says whether the body is meant to exceed the size limit. */
export function mutate(json: FuzzObject, message: DescMessage, mutation: Mutation, ctx: GenContext): { overLimit: boolean } {
  const { rng } = ctx;
  const sites = sitesOf(json, message);
  const site = sites.length > 0 ? rng.pick(sites) : undefined;
  const over = rng.chance(0.15);
  const target = over ? ctx.maxBytes + rng.between(1, ctx.maxBytes / 2) : rng.between(ctx.maxBytes / 8, (ctx.maxBytes * 7) / 8);
  switch (mutation) {
    case "valid":
      return { overLimit: false };
    case "empty":
      for (const key of Object.keys(json)) delete json[key];
      return { overLimit: false };
    case "boundary":
      for (let i = rng.between(1, 3); i > 0 && sites.length > 0; i--) {
        const s = rng.pick(sites);
        setField(s, boundaryFor(s.field, ctx));
      }
      return { overLimit: false };
    case "mistyped":
      if (site !== undefined) setField(site, mistyped(rng));
      return { overLimit: false };
    case "null":
      if (site !== undefined) setField(site, null);
      return { overLimit: false };
    case "unknown_field": {
      const key = rng.pick(["unknown", "__proto__", "constructor", "a".repeat(rng.pick([1, 100, 5000])), "", "\u0000", "\ud800", "run-id"]);
      // defineProperty, not assignment: `json["__proto__"] = …` would set the prototype instead of adding a key.
      Object.defineProperty(json, key, { value: rng.pick<FuzzJson>([1, "x", {}, [], null]), enumerable: true, writable: true, configurable: true });
      // The same field under its proto name and its JSON name: a duplicate the parser must settle or refuse.
      if (site !== undefined && site.field.name !== site.field.jsonName && rng.chance(0.5)) {
        site.object[site.field.name] = plausibleField(site.field, ctx, 3);
        site.object[site.field.jsonName] = plausibleField(site.field, ctx, 3);
      }
      return { overLimit: false };
    }
    case "deep": {
      const depth = rng.pick([63, 64, 65, 200, 1000, 10_000, Math.floor(ctx.maxBytes / 3)]);
      const text = deepJsonText(rng, depth);
      const jsonText = sites.filter((s) => s.field.fieldKind === "scalar" && s.field.scalar === ScalarType.STRING && JSON_FIELD.test(s.field.name));
      if (jsonText.length > 0 && rng.chance(0.6)) setField(rng.pick(jsonText), rng.chance(0.2) ? badJsonText(rng) : text);
      else if (site !== undefined) setField(site, new RawJson(text));
      else json["deep"] = new RawJson(text);
      return { overLimit: Buffer.byteLength(text) > ctx.maxBytes };
    }
    case "huge_array": {
      const lists = sites.filter((s) => s.field.fieldKind === "list");
      const s = lists.length > 0 ? rng.pick(lists) : site;
      if (s !== undefined) setField(s, hugeArray(s.field, ctx, target));
      return { overLimit: over };
    }
    case "huge_string": {
      const strings = sites.filter((s) => s.field.fieldKind === "scalar" && s.field.scalar === ScalarType.STRING);
      const s = strings.length > 0 ? rng.pick(strings) : undefined;
      const unit = rng.pick(["x", "é", "🚀"]);
      const text = unit.repeat(Math.ceil(target / Buffer.byteLength(unit)));
      if (s !== undefined) setField(s, text);
      else json["huge"] = text;
      return { overLimit: over };
    }
    case "invalid_utf8": {
      const strings = sites.filter((s) => s.field.fieldKind === "scalar" && s.field.scalar === ScalarType.STRING);
      if (strings.length > 0) setField(rng.pick(strings), invalidUtf8Literal(rng));
      else json[rng.pick(["x", "y"])] = invalidUtf8Literal(rng);
      return { overLimit: false };
    }
  }
}

export const MUTATIONS: readonly (readonly [Mutation, number])[] = [
  ["valid", 38], ["empty", 4], ["boundary", 18], ["mistyped", 8], ["null", 3], ["unknown_field", 5], ["deep", 5],
  ["huge_array", 4], ["huge_string", 4], ["invalid_utf8", 4],
];
