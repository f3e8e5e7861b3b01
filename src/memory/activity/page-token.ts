// ListActivity page tokens: a cursor of {seq, sort, filters}, where `filters` digests everything that decides which
// entries the listing walks (see platform/page-cursor.ts).
import { invalidArgument, quoted } from "../../platform/errors.js";
import { cursorSeq, decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import { filterSignature, type ActivityQuery } from "./activity-scan.js";

/** The token of the page after the one that ended with `lastSeq`. */
export function encodePageToken(q: ActivityQuery, lastSeq: number): string {
  return encodeCursor({ seq: lastSeq, sort: q.sort, filters: filtersDigest(filterSignature(q)) });
}

/** The seq the page continues after (in the query's order); throws a 400 naming page_token on any mismatch. */
export function decodePageToken(token: string, q: ActivityQuery): number {
  const { seq, sort, filters } = decodeCursor(token);
  const at = cursorSeq(seq);
  if (typeof sort !== "string" || typeof filters !== "string") throw invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (sort !== q.sort) throw invalidArgument("page_token", `was issued for sort ${quoted(sort)}, not "${q.sort}"`);
  if (filters !== filtersDigest(filterSignature(q))) throw invalidArgument("page_token", "was issued for other filters; repeat the filters of the first page");
  return at;
}
