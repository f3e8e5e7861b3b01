// Export page tokens: the kind an export has reached and the last key it read there (without the owner, so a token
// only ever moves within the caller's own records). The base64url of a small JSON object, like other page tokens,
// but allowed to be longer: a key may hold several caller-chosen names of up to 256 bytes.
import { invalidArgument } from "../platform/errors.js";
import type { KeySuffix } from "./tenant-kind.js";

const MAX_TOKEN_CHARS = 8192;
const MAX_KEY_PARTS = 6;

export interface ExportCursor {
  readonly kind: string;
  /** Undefined: the kind's records from the start. */
  readonly after: KeySuffix | undefined;
}

export function encodeExportCursor(cursor: ExportCursor): string {
  return Buffer.from(JSON.stringify({ k: cursor.kind, a: cursor.after ?? null }), "utf8").toString("base64url");
}

/** The cursor of a token; INVALID_ARGUMENT naming page_token when it is not one of ours or names no kind in `kinds`. */
export function decodeExportCursor(token: string, kinds: readonly string[]): ExportCursor {
  const malformed = invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) throw malformed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw malformed;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw malformed;
  const { k, a } = parsed as Record<string, unknown>;
  if (typeof k !== "string" || !kinds.includes(k)) throw malformed;
  if (a === null) return { kind: k, after: undefined };
  if (!Array.isArray(a) || a.length === 0 || a.length > MAX_KEY_PARTS) throw malformed;
  const after = a.map((part: unknown) => {
    if (typeof part === "string" || (typeof part === "number" && Number.isFinite(part))) return part;
    throw malformed;
  });
  return { kind: k, after };
}
