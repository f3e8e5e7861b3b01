// ListActivity page tokens: base64url of {seq, sort, filters}, where `filters` hashes everything that decides which
// entries the listing walks. Tokens are not secret: a forged seq only moves the cursor, visibility is enforced on
// every read.
import { createHash } from "node:crypto";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { filterSignature, type ActivityQuery, type Sort } from "./activity-scan.js";

const MAX_PAGE_TOKEN_LENGTH = 512;

interface PageCursor {
  readonly seq: number;
  readonly sort: Sort;
  readonly filters: string;
}

function filtersHash(q: ActivityQuery): string {
  return createHash("sha256").update(filterSignature(q)).digest("base64url").slice(0, 22);
}

/** The token of the page after the one that ended with `lastSeq`. */
export function encodePageToken(q: ActivityQuery, lastSeq: number): string {
  const cursor: PageCursor = { seq: lastSeq, sort: q.sort, filters: filtersHash(q) };
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

/** The seq the page continues after (in the query's order); throws a 400 naming page_token on any mismatch. */
export function decodePageToken(token: string, q: ActivityQuery): number {
  const malformed = invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (token.length > MAX_PAGE_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) throw malformed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw malformed;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw malformed;
  const { seq, sort, filters } = parsed as Record<string, unknown>;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0 || typeof sort !== "string" || typeof filters !== "string") {
    throw malformed;
  }
  if (sort !== q.sort) throw invalidArgument("page_token", `was issued for sort ${quoted(sort)}, not "${q.sort}"`);
  if (filters !== filtersHash(q)) throw invalidArgument("page_token", "was issued for other filters; repeat the filters of the first page");
  return seq;
}
