// What a lesson is recalled for: the situations it applies in (its conditions, and the failure signatures of the runs
// that taught or confirmed it) and the situations it was surfaced in and did not apply to. A failure signature is an
// error line with what changes from one occurrence to the next taken out — timestamps, log levels and prefixes, ids,
// hosts, ports, paths, numbers — so that the same failure logged by another host, tool or format reads alike.
import { ERROR_MARKER_TERMS } from "./error-words.js";
import { terms } from "./text.js";

/** Situations a lesson keeps of each kind: the most recent are kept. */
export const MAX_SITUATIONS = 16;
/** A signature keeps at most this many characters: the error's class, code, component and verb come first. */
const SIGNATURE_CHARS = 240;

/** The situations a lesson's metadata holds. */
export interface LessonSituations {
  /** Conditions it was learned under (`when …`, `while …`, `about …`, `in step …`). */
  readonly conditions: readonly string[];
  /** Failure signatures of the runs it was learned in or helped. */
  readonly seen: readonly string[];
  /** Failure signatures of runs it was surfaced in and did not apply to. */
  readonly notFor: readonly string[];
}

const EMPTY: LessonSituations = { conditions: [], seen: [], notFor: [] };

const ISO_TIME = /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g;
/** glog/klog: `E0503 11:02:17.123456 4411 file.go:88]`. */
const GLOG_PREFIX = /\b[IWEF]\d{4}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+\d+\s+[\w./-]+:\d+\]/g;
const CLOCK = /\b\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\b/g;
const LEVEL_FIELD = /"?\b(?:level|lvl|severity|loglevel|log_level)"?\s*[=:]\s*"?\w+"?/gi;
/** Keys of JSON log lines (`"err":`) and of `key=value` pairs: the value is the evidence, the key a format's choice. */
const FIELD_KEY = /"[\w.-]+"\s*:|\b[\w.]+=/g;
/** A numbered instance of something (`worker-3`, `consumer-12`): the thing stays, its number goes. */
const INSTANCE = /\b([a-z]{2,})-\d{1,3}\b/g;
const VERSION = /\bv?\d+(?:\.\d+){1,3}(?:-[\w.]+)?\b/g;
const LEVEL_WORD = /(?:^|[\s[(<"'{,])(?:error|err|warn|warning|info|debug|trace|fatal|crit|critical|notice|e|w|i)(?=[\])>"':,\s]|$)/gi;
const URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)\]]+/gi;
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g;
/** Dotted host names (api.billing.example.com, db-3.internal) and `host:port`. */
const HOST = /\b(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?\b/gi;
const PORT = /:\d{2,5}\b/g;
const PATH = /(?:^|[\s"'=(])(?:~|\.{1,2})?(?:\/[\w.@%+-]+){2,}\/?/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** A token of hex digits or letters and digits mixed with at least two digits: an id, a hash, a pod suffix. */
const ID_TOKEN = /(?<![A-Za-z]-)\b(?=[a-z0-9_-]*\d[a-z0-9_-]*\d)(?![a-z]{1,6}-?\d{2,6}\b)[a-z0-9][a-z0-9_-]{3,}\b/gi;
const NUMBER = /(?<![A-Za-z]-?)\b\d+(?:[.,]\d+)*(?:ms|s|m|h|kb|mb|gb|tb|kib|mib|gib|%)?\b/gi;
/** Status and error codes stay: `429`, `503`, `ORA-00054`, `E11000` name the failure. */
const STATUS_CODE = /\b[1-5]\d{2}\b/g;

/**
 * A log line's leading prefix: time stamps, a glog header, a level (upper case, bare or bracketed, or as a field), a
 * bracketed tag. "Error: …" in a sentence stays: it is how the message itself begins.
 */
const LOG_PREFIX =
  /^(?:\s*(?:\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?|[IWEF]\d{4}\s+\d{2}:\d{2}:\d{2}(?:\.\d+)?\s+\d+\s+[\w./-]+:\d+\]|\[?(?:ERROR|ERR|WARN|WARNING|INFO|DEBUG|FATAL|CRITICAL|E|W)\]?:?(?=\s)|(?:level|lvl|severity)=\w+|\[[\w.-]{1,40}\]))+\s*/;

/** A log line with its leading prefix (time, level, source position, tag) taken off, as a person would quote it. */
export function withoutLogPrefix(text: string): string {
  const stripped = text.replace(LOG_PREFIX, "");
  return stripped === "" ? text : stripped;
}

/**
 * The failure signature of an error line: lowercase words of what failed and how, in order, with the parts that
 * differ between occurrences of the same failure taken out. "" when nothing is left.
 */
export function signatureOf(text: string): string {
  const codes: string[] = text.match(STATUS_CODE) ?? [];
  let s = text.replace(/^\s*(?:observation|thought|action|tool_call|note|result|summary|task)\s*:\s*/i, " ");
  s = s
    .replace(URL, " ")
    .replace(GLOG_PREFIX, " ")
    .replace(ISO_TIME, " ")
    .replace(CLOCK, " ")
    .replace(LEVEL_FIELD, " ")
    .replace(UUID, " ")
    .replace(IPV4, " ")
    .replace(HOST, " ")
    .replace(PATH, " ")
    .replace(PORT, " ")
    .replace(FIELD_KEY, " ")
    .replace(VERSION, " ")
    .replace(INSTANCE, "$1")
    .replace(ID_TOKEN, " ")
    .replace(NUMBER, (whole) => (codes.includes(whole) ? whole : " "))
    .replace(LEVEL_WORD, " ");
  const kept = s
    .replace(/[^\p{L}\p{N}_.:-]+/gu, " ")
    .split(" ")
    .map((w) => w.replace(/^[.:_-]+|[.:_-]+$/g, ""))
    .filter((w) => w.length > 1 || /\d/.test(w))
    .flatMap(identifierWords);
  return kept.join(" ").toLowerCase().slice(0, SIGNATURE_CHARS).trim();
}

/**
 * The index terms of a failure line's signature that say what failed and how: the words that only say that something
 * failed ("error", "failed", "cannot") taken out, since every failure line has them.
 */
export function failureTerms(text: string): Set<string> {
  return new Set(terms(signatureOf(text)).filter((term) => !ERROR_MARKER_TERMS.has(term)));
}

/**
 * The words of an identifier, as a person would say them: `OutOfMemoryError` → out of memory error,
 * `max.poll.interval.ms` → max poll interval ms, `PermissionError` → permission error. The same failure is named by
 * class in one log and in words in another; split, the two share words and meaning. Codes stay whole (`ORA-00054`).
 */
function identifierWords(word: string): string[] {
  if (/^[A-Za-z]{1,6}-?\d+$/.test(word)) return [word];
  return word
    .replace(/([a-z\d])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[\s._:-]+/)
    .filter((w) => w.length > 1 || /\d/.test(w));
}

/** The situations a lesson's metadata (JSON text) holds; empty for any other shape. */
export function situationsOf(metadataJson: string): LessonSituations {
  if (!metadataJson.includes("conditions") && !metadataJson.includes("situations") && !metadataJson.includes("not_for")) return EMPTY;
  let value: unknown;
  try {
    value = JSON.parse(metadataJson);
  } catch {
    return EMPTY;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return EMPTY;
  const record = value as Record<string, unknown>;
  const strings = (key: string): string[] => (Array.isArray(record[key]) ? (record[key] as unknown[]).filter((c): c is string => typeof c === "string") : []);
  // Reflection writes `conditions`; an agent writing a lesson itself (batch_insert's `lesson_conditions_json`) writes
  // `lesson_conditions`.
  return { conditions: [...strings("conditions"), ...strings("lesson_conditions")], seen: strings("situations"), notFor: strings("not_for") };
}

/**
 * A lesson's metadata with situations added to one of its lists (`conditions`, `situations` or `not_for`), the most
 * recent MAX_SITUATIONS kept; a situation added to one of `situations` and `not_for` leaves the other (a lesson that
 * later helped in a situation is for it again). Undefined when nothing changes.
 */
export function withSituations(metadataJson: string, key: "conditions" | "situations" | "not_for", added: readonly string[]): string | undefined {
  let metadata: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(metadataJson);
    metadata = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    metadata = {};
  }
  const list = (name: string): string[] => (Array.isArray(metadata[name]) ? (metadata[name] as unknown[]).filter((c): c is string => typeof c === "string") : []);
  const known = list(key);
  const fresh = [...new Set(added.filter((s) => s.trim() !== "" && !known.includes(s)))];
  const opposite = key === "situations" ? "not_for" : key === "not_for" ? "situations" : undefined;
  const oppositeList = opposite === undefined ? [] : list(opposite);
  const cleared = oppositeList.filter((s) => !added.includes(s));
  if (fresh.length === 0 && cleared.length === oppositeList.length) return undefined;
  const next: Record<string, unknown> = { ...metadata, [key]: [...known, ...fresh].slice(-MAX_SITUATIONS) };
  if (opposite !== undefined && oppositeList.length > 0) next[opposite] = cleared;
  return JSON.stringify(next);
}

/**
 * What a lesson is found by: its text, the conditions under which it applies and the failure signatures it was seen
 * with. Its postings and vector are made from this text, and made again when situations are added.
 */
export function lessonIndexText(content: string, situations: Pick<LessonSituations, "conditions" | "seen">): string {
  return [content, ...situations.conditions, ...situations.seen].join("\n");
}

/** The text an entry is indexed by: a lesson's or rule's with its situations (see lessonIndexText), else its content. */
export function indexTextOf(entry: { readonly entryType: string; readonly content: string; readonly metadataJson: string }): string {
  return entry.entryType === "lesson" || entry.entryType === "rule" ? lessonIndexText(entry.content, situationsOf(entry.metadataJson)) : entry.content;
}
