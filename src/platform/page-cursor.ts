// Page tokens: the base64url of a small JSON cursor. Tokens are not secret — a forged cursor only moves where a page
// starts, since visibility is enforced on every read — but a malformed one is a 400 naming `page_token`.
import { createHash } from "node:crypto";
import { invalidArgument } from "./errors.js";

const MAX_PAGE_TOKEN_LENGTH = 512;

export function encodeCursor(cursor: Readonly<Record<string, unknown>>): string {
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

/** The cursor object of a token; throws INVALID_ARGUMENT naming page_token when it is not one. */
export function decodeCursor(token: string, maxLength = MAX_PAGE_TOKEN_LENGTH): Record<string, unknown> {
  const malformed = invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (token.length > maxLength || !/^[A-Za-z0-9_-]+$/.test(token)) throw malformed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw malformed;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw malformed;
  return parsed as Record<string, unknown>;
}

/** A short digest of what decides a listing's rows, so a token is refused with other filters than it was issued for. */
export function filtersDigest(signature: string): string {
  return createHash("sha256").update(signature).digest("base64url").slice(0, 22);
}

/** A cursor field that must be a non-negative safe integer (a seq). */
export function cursorSeq(value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  return value;
}
