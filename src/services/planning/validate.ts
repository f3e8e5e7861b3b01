// Request validation of the planning routes: JSON values and texts bounded in bytes, names, page tokens.
import { invalidArgument } from "../../platform/errors.js";
import { decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import { PLANNING_LIMITS, type VarType } from "../../planning/planning-records.js";
import { bounded, parseJson } from "../memory/validate.js";

/** A JSON value text of at most PLANNING_LIMITS.valueBytes bytes, and its JSON type. */
export function jsonValue(field: string, value: string): { text: string; varType: VarType } {
  if (value.trim() === "") throw invalidArgument(field, "is required (any JSON value, e.g. 42, \"text\" or {\"k\":1})");
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > PLANNING_LIMITS.valueBytes) throw invalidArgument(field, `must be at most ${PLANNING_LIMITS.valueBytes} bytes of UTF-8, got ${bytes}`);
  return { text: value, varType: jsonType(parseJson(field, value)) };
}

/** A JSON text (of any type) bounded to PLANNING_LIMITS.textBytes; "" becomes "{}". */
export function smallJson(field: string, value: string): string {
  if (value === "") return "{}";
  boundedText(field, value);
  parseJson(field, value);
  return value;
}

/** Free text of at most PLANNING_LIMITS.textBytes bytes. */
export function boundedText(field: string, value: string): string {
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > PLANNING_LIMITS.textBytes) throw invalidArgument(field, `must be at most ${PLANNING_LIMITS.textBytes} bytes of UTF-8, got ${bytes}`);
  return value;
}

export function jsonType(value: unknown): VarType {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  switch (typeof value) {
    case "string":
      return "string";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    default:
      return "object";
  }
}

/** A compare-and-set version from an optional uint64 field. */
export function expectedVersion(value: bigint | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw invalidArgument("expected_version", "is larger than any version");
  return Number(value);
}

/** Page size: default (and at most) PLANNING_LIMITS.pageSize. */
export function pageSize(limit: number): number {
  return limit === 0 ? PLANNING_LIMITS.pageSize : Math.min(PLANNING_LIMITS.pageSize, Math.max(1, limit));
}

/** Name-ordered listings continue after a name; the token is bound to the run it was issued for. */
export function encodeNameToken(runId: string, after: string | undefined): string {
  return after === undefined ? "" : encodeCursor({ after, run: filtersDigest(runId) });
}

export function decodeNameToken(runId: string, token: string): string | undefined {
  if (token === "") return undefined;
  const { after, run } = decodeCursor(token);
  if (typeof after !== "string" || typeof run !== "string") throw invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (run !== filtersDigest(runId)) throw invalidArgument("page_token", "was issued for another run_id");
  return bounded("page_token", after);
}
