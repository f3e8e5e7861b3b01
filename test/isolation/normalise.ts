// Turns an answer into what two owners with the same history must get alike: named values (the probed id, the
// caller's own records, its username) become placeholders, server-assigned fresh ids become numbered placeholders in
// order of appearance, and times, durations and opaque page tokens are dropped.
import type { Json, JsonObject } from "../harness/callers.js";
import type { Answer } from "./route-caller.js";

/** Fields that measure time spent or time since: two identical calls differ in them. */
const TIMING_KEY = /(latency|elapsed|duration|took|_ms$|Ms$|_seconds$|age_hours|age_days|uptime|generated_at)/i;
/** Fields that hold a point in time (snake_case in answers, camelCase in export records). */
const TIME_KEY = /(^|_)(at|time|timestamp|ts|date|since|until)$|[a-z](At|Time|Timestamp)$/;
/**
 * Numbers drawn from server-wide sequences (a variable's `version`, a record's `seq` in an export). Like the ids the
 * server assigns, they count every owner's writes of that kind: a known, reported side channel, not compared here.
 */
const SEQUENCE_KEY = /^(version|seq|startSeq|endSeq)$/;
/** Vectors are derived from text that holds the probed labels; the text itself is compared. */
const VECTOR_KEY = /^(vector|embedding)$/;
/** Cursors and Forget preview tokens: opaque, and they encode the caller's own filters and positions (or entries). */
const TOKEN_KEY = /(page|preview)_token$/;
const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g;
/** Epoch seconds or milliseconds (2020 to 2033) inside text. */
const EPOCH = /(?<![\w.])1[6-9]\d{8}(\d{3})?(?![\w.])/g;
/**
 * Random ids (skills, core transactions, subscriptions, generated control-session runs): they carry no order, so they
 * all read `<random>`, and lists sorted by them are compared as sets.
 */
const RANDOM_ID = /\b(?:skl|cs)_[0-9a-f]{16,}\b|\bskv_[0-9a-f]{16,}_\d+\b|\bsub_[A-Za-z0-9_-]{24}(?![A-Za-z0-9_-])|\brun_[A-Za-z0-9]{24}\b/g;
/** Ids the server hands out from sequences: a known prefix and an underscore, or a uuid. */
const FRESH_ID = /\b(?:ent|arc|chk|job|hof|fbk|prj|pv|skl|skv|cs|sub|goal|act|out|so|sp|str|evt|run)_[A-Za-z0-9_-]+|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
/** A number of four digits or more in an id field, or in text: a core node id the server assigned. */
const LONG_NUMBER = /(?<![\w.<:])\d{4,}(?![\w.>])/g;
const ID_KEY = /(^|_)ids?$/;

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** JSON text held in a string (metadata, payloads, export lines, JSONL): its values, to normalise them one by one. */
function embeddedJson(value: string): Json[] | undefined {
  if (!/^\s*[[{]/.test(value)) return undefined;
  try {
    return value
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as Json);
  } catch {
    return undefined;
  }
}

export interface Names {
  /** Text anywhere → placeholder: the probed id, the caller's own records, the victim's or the ghost's values. */
  readonly tokens: ReadonlyMap<string, string>;
  /** A field's whole value → placeholder, for values too short to replace in text (the caller's numeric user id). */
  readonly byField?: Readonly<Record<string, ReadonlyMap<string, string>>>;
  /** Fields left out altogether. */
  readonly ignore?: RegExp;
}

export class Normaliser {
  readonly #tokens: ReadonlyMap<string, string>;
  readonly #pattern: RegExp | undefined;
  readonly #byField: Readonly<Record<string, ReadonlyMap<string, string>>>;
  readonly #ignore: RegExp | undefined;

  constructor(names: Names) {
    this.#tokens = names.tokens;
    this.#byField = names.byField ?? {};
    this.#ignore = names.ignore;
    const values = [...names.tokens.keys()].filter((v) => v !== "").sort((a, b) => b.length - a.length);
    this.#pattern = values.length === 0 ? undefined : new RegExp(`(?<![A-Za-z0-9_-])(?:${values.map(escape).join("|")})(?![A-Za-z0-9_-])`, "g");
  }

  answer(answer: Answer): Json {
    const fresh = new Map<string, string>();
    const number = (m: string): string => {
      if (!fresh.has(m)) fresh.set(m, `<fresh:${fresh.size + 1}>`);
      return fresh.get(m) as string;
    };
    const text = (value: string, idField: boolean): string => {
      let out = this.#pattern === undefined ? value : value.replace(this.#pattern, (m) => this.#tokens.get(m) ?? m);
      out = out.replace(ISO_TIME, "<time>").replace(EPOCH, "<time>").replace(RANDOM_ID, "<random>").replace(FRESH_ID, number);
      return idField || /\D/.test(out) ? out.replace(LONG_NUMBER, number) : out;
    };
    const walk = (value: Json, key: string): Json => {
      if (typeof value === "string") {
        const named = this.#byField[key]?.get(value);
        if (named !== undefined) return named;
        const embedded = embeddedJson(value);
        if (embedded !== undefined) return embedded.map((item) => walk(item, key));
        if (value !== "" && (TIME_KEY.test(key) || TOKEN_KEY.test(key))) return `<${TOKEN_KEY.test(key) ? "token" : "time"}>`;
        if (value !== "" && SEQUENCE_KEY.test(key)) return "<seq>";
        if (value !== "" && VECTOR_KEY.test(key)) return "<vector>";
        return text(value, ID_KEY.test(key));
      }
      if (typeof value === "number") {
        if (SEQUENCE_KEY.test(key)) return "<seq>";
        if (ID_KEY.test(key) && value >= 1000) return number(String(value));
        return Number.isInteger(value) ? value : Number(value.toPrecision(4));
      }
      if (Array.isArray(value)) {
        const items = value.map((item) => walk(item, key));
        const texts = items.map((item) => JSON.stringify(item));
        // A list ordered by random ids has no order to compare.
        return texts.some((t) => t.includes("<random>")) ? items.map((item, i) => [texts[i] as string, item] as const).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, item]) => item) : items;
      }
      if (value === null || typeof value !== "object") return value;
      const out: JsonObject = {};
      for (const [name, field] of Object.entries(value)) {
        if (TIMING_KEY.test(name) || this.#ignore?.test(name)) continue;
        if (TIME_KEY.test(name) && typeof field === "number") continue;
        out[text(name, false)] = walk(field, name);
      }
      return out;
    };
    return { status: answer.status, code: answer.code, message: text(answer.message, false), body: walk(answer.body, "") };
  }
}
