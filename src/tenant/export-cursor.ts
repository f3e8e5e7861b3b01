// Export page tokens: the kind an export has reached and the last key it read there (without the owner, so a token
// only ever moves within the caller's own records). Page tokens like the others (platform/page-cursor.ts),
// but allowed to be longer: a key may hold several caller-chosen names of up to 256 bytes.
import { invalidArgument } from "../platform/errors.js";
import { decodeCursor, encodeCursor } from "../platform/page-cursor.js";
import type { KeySuffix } from "./tenant-kind.js";

const MAX_TOKEN_CHARS = 8192;
const MAX_KEY_PARTS = 6;

export interface ExportCursor {
  readonly kind: string;
  /** Undefined: the kind's records from the start. */
  readonly after: KeySuffix | undefined;
}

export function encodeExportCursor(cursor: ExportCursor): string {
  return encodeCursor({ k: cursor.kind, a: cursor.after ?? null });
}

/** The cursor of a token; INVALID_ARGUMENT naming page_token when it is not one of ours or names no kind in `kinds`. */
export function decodeExportCursor(token: string, kinds: readonly string[]): ExportCursor {
  const malformed = invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  const { k, a } = decodeCursor(token, MAX_TOKEN_CHARS);
  if (typeof k !== "string" || !kinds.includes(k)) throw malformed;
  if (a === null) return { kind: k, after: undefined };
  if (!Array.isArray(a) || a.length === 0 || a.length > MAX_KEY_PARTS) throw malformed;
  const after = a.map((part: unknown) => {
    if (typeof part === "string" || (typeof part === "number" && Number.isFinite(part))) return part;
    throw malformed;
  });
  return { kind: k, after };
}
