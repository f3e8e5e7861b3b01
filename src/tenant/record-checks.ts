// Checks an imported record needs beyond its decoder's types: texts that readers parse as JSON must be JSON, and ids
// the caller chose must fit where the API would have taken them.
import { recordFault } from "./import-faults.js";

/** Longest caller-chosen id (run, agent, step, name …) the API takes, in UTF-8 bytes. */
const MAX_ID_BYTES = 256;

/** A JSON object text, as metadata fields hold. */
export function checkJsonObject(field: string, text: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw recordFault(field, "must be the text of a JSON object");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw recordFault(field, "must be the text of a JSON object");
}

/** Any JSON text (a variable's value). */
export function checkJson(field: string, text: string): void {
  try {
    JSON.parse(text);
  } catch {
    throw recordFault(field, "must be JSON text");
  }
}

/** A caller-chosen id: at most 256 bytes and without NUL (key ranges rely on it). `required`: not empty either. */
export function checkId(field: string, id: string, required = true): void {
  if (required && id === "") throw recordFault(field, "is required");
  if (Buffer.byteLength(id) > MAX_ID_BYTES) throw recordFault(field, `is longer than ${MAX_ID_BYTES} bytes`);
  if (id.includes("\u0000")) throw recordFault(field, "must not contain NUL");
}
