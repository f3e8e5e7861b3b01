// One table maps every error code to its HTTP status for all transports, plus helpers to raise errors.
import { Code, ConnectError } from "@connectrpc/connect";

/** Response header by which a service asks the HTTP gateway for a status the code table cannot express. */
export const HTTP_STATUS_HEADER = "x-engram-http-status";

/** The HTTP status of each code. It agrees with the Connect protocol's own mapping (checked by a unit test). */
export const HTTP_STATUS_BY_CODE: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** snake_case code names as they appear in the JSON error body (`invalid_argument`, …). */
const CODE_NAMES: Readonly<Record<string, Code>> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, value]) => typeof value === "number")
    .map(([name, value]) => [name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase(), value as Code]),
);

export function codeName(code: Code): string {
  for (const [name, value] of Object.entries(CODE_NAMES)) if (value === code) return name;
  return "unknown";
}

export function codeFromName(name: string): Code {
  return CODE_NAMES[name] ?? Code.Unknown;
}

export function httpStatusOf(code: Code): number {
  return HTTP_STATUS_BY_CODE[code] ?? 500;
}

/** How many characters of a caller's value an error message quotes. */
export const QUOTE_MAX_CHARS = 64;
/** The longest error message any transport sends; longer ones are cut (a gRPC trailer must stay small). */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

/** Cuts text to at most `max` UTF-16 units plus "…", never splitting a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/**
 * Quotes a caller's value in an error message: its first QUOTE_MAX_CHARS characters then "…", so a message stays
 * short whatever was sent. Every message that echoes input goes through here.
 */
export function quoted(value: string): string {
  return `"${cut(value, QUOTE_MAX_CHARS)}"`;
}

/** Double-quoted runs, paired left to right; libraries (protobuf JSON's unknown keys) may still quote whole values. */
const QUOTED_RUN = /"([^"]*)"/g;

/**
 * The transports' last line of defence before an error message leaves: long quoted values are cut as `quoted` cuts
 * them, and the whole message to MAX_ERROR_MESSAGE_CHARS.
 */
export function boundedMessage(message: string): string {
  const shortQuotes = message.replace(QUOTED_RUN, (run, inner: string) => (inner.length > QUOTE_MAX_CHARS ? quoted(inner) : run));
  return cut(shortQuotes, MAX_ERROR_MESSAGE_CHARS);
}

/** A 400 that names the offending field in its message. */
export function invalidArgument(field: string, problem: string): ConnectError {
  return new ConnectError(`${field}: ${problem}`, Code.InvalidArgument);
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}

export function permissionDenied(message: string): ConnectError {
  return new ConnectError(message, Code.PermissionDenied);
}

export function unauthenticated(message: string): ConnectError {
  return new ConnectError(message, Code.Unauthenticated);
}

/** A route that no longer exists: 410 Gone over HTTP, UNIMPLEMENTED over RPC transports. */
export function gone(route: string, instead: string): ConnectError {
  return new ConnectError(`${route} was removed; use ${instead}`, Code.Unimplemented, {
    [HTTP_STATUS_HEADER]: "410",
  });
}

/**
 * A write refused because the store reached its cap (SERVICE_MAX_STORE_BYTES): RESOURCE_EXHAUSTED over gRPC and
 * Connect, 507 Insufficient Storage over HTTP/JSON. Nothing of the write was stored; reads still work, and writes
 * resume once deletions free space. The message names the cap only, never how much the store holds: that figure
 * moves with every owner's data.
 */
export function storageFull(maxStoreBytes: number): ConnectError {
  return new ConnectError(
    `storage is full (SERVICE_MAX_STORE_BYTES=${maxStoreBytes}): delete data to free space (compaction then shrinks the file), or raise the limit`,
    Code.ResourceExhausted,
    { [HTTP_STATUS_HEADER]: "507" },
  );
}

/** Wraps an unexpected failure: the caller sees a generic message, the cause stays in the log. */
export function internal(cause: unknown): ConnectError {
  return new ConnectError("internal error", Code.Internal, undefined, undefined, cause);
}
