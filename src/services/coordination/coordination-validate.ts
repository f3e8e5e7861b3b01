// Request checks of the coordination routes that the memory validators do not cover: bounded string lists, short
// statuses and free text.
import { invalidArgument } from "../../platform/errors.js";
import { bounded } from "../memory/validate.js";

/** Most values in one list field (capabilities, scopes, lanes). */
export const MAX_LIST_VALUES = 64;
export const MAX_STATUS_CHARS = 64;
export const MAX_PROGRESS_CHARS = 4096;
export const MAX_ENTRY_IDS = 100;

/** A list of ids: at most `max` values, each non-empty and bounded; duplicates dropped, order kept. */
export function idList(field: string, values: readonly string[], max = MAX_LIST_VALUES): string[] {
  if (values.length > max) throw invalidArgument(field, `must hold at most ${max} values, got ${values.length}`);
  values.forEach((value, i) => {
    if (value.trim() === "") throw invalidArgument(`${field}[${i}]`, "must not be empty");
    bounded(`${field}[${i}]`, value);
  });
  return [...new Set(values)];
}

/** Free text of at most `max` characters. */
export function shortText(field: string, value: string, max: number): string {
  if (value.length > max) throw invalidArgument(field, `must be at most ${max} characters, got ${value.length}`);
  return value;
}
