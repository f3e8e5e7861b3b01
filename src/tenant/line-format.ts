// The export's line format (see tenant_service.proto): the header line, one line per record, and the parsing of an
// import line into its kind, source id and record, refusing with the line's field what does not fit.
import { LineFault } from "./import-faults.js";

export const EXPORT_FORMAT = "engram-export";
export const EXPORT_FORMAT_VERSION = 1;

/** Longest source id a line may carry (a key of caller-chosen names, as JSON). */
const MAX_SOURCE_ID_CHARS = 2048;

export function headerLine(embedderId: string, now: number): string {
  return JSON.stringify({ kind: "header", format: EXPORT_FORMAT, version: EXPORT_FORMAT_VERSION, exported_at: new Date(now).toISOString(), embedder: embedderId });
}

export function recordLine(kind: string, id: string, record: Readonly<Record<string, unknown>>): string {
  return JSON.stringify({ kind, id, record });
}

export type ParsedLine =
  | { readonly kind: "header" }
  | { readonly kind: string; readonly id: string; readonly record: Readonly<Record<string, unknown>> };

function isObject(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A line as sent: a header, or a record line of one of `kinds`. Throws LineFault. */
export function parseLine(text: string, kinds: ReadonlySet<string>): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new LineFault("", "is not JSON; each line is one JSON object of an export");
  }
  if (!isObject(value)) throw new LineFault("", "must be a JSON object with kind, id and record");
  const kind = value["kind"];
  if (typeof kind !== "string" || kind === "") throw new LineFault("kind", "is required: header or a record kind of the export format");
  if (kind === "header") {
    if (value["format"] !== EXPORT_FORMAT) throw new LineFault("format", `must be "${EXPORT_FORMAT}"`);
    if (value["version"] !== EXPORT_FORMAT_VERSION) {
      throw new LineFault("version", `format version ${JSON.stringify(value["version"]) ?? "none"} is not one this server reads (${EXPORT_FORMAT_VERSION})`);
    }
    return { kind };
  }
  if (!kinds.has(kind)) throw new LineFault("kind", `unknown kind ${JSON.stringify(kind.slice(0, 40))}`);
  const id = value["id"];
  if (typeof id !== "string" || id === "") throw new LineFault("id", "is required: the record's id on the exporting server");
  if (id.length > MAX_SOURCE_ID_CHARS) throw new LineFault("id", `is longer than ${MAX_SOURCE_ID_CHARS} characters`);
  const record = value["record"];
  if (!isObject(record)) throw new LineFault("record", "is required: a JSON object");
  return { kind, id, record };
}

/** Float32 vector bytes as base64, as lines carry them. */
export function vectorToBase64(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64");
}

/** A vector from a line's base64 field; LineFault naming `field` when it is not one. */
export function vectorFromBase64(field: string, text: unknown): Float32Array {
  if (typeof text !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw new LineFault(field, "must be base64 of Float32 values");
  const bytes = Buffer.from(text, "base64");
  if (bytes.byteLength % 4 !== 0) throw new LineFault(field, "must be base64 of Float32 values (a multiple of 4 bytes)");
  const vector = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(vector.buffer).set(bytes);
  for (const x of vector) if (!Number.isFinite(x)) throw new LineFault(field, "must hold finite numbers only");
  return vector;
}
