// The error body every non-2xx HTTP answer carries (see transport/gateway/error-body.ts), and the statuses that
// name it, as OpenAPI components.
import { Code } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { codeName } from "../platform/errors.js";

export const ERROR_SCHEMA_NAME = "Error";

const ERROR_SCHEMA: JsonObject = {
  type: "object",
  description:
    "The body of every error answer on the HTTP/JSON routes, whatever the route. `code` is the gRPC status name in " +
    "snake_case; the HTTP status follows from it by one table shared by every transport.",
  properties: {
    code: {
      type: "string",
      enum: Object.values(Code)
        .filter((c): c is Code => typeof c === "number")
        .map((c) => codeName(c)),
      description: "The status code name, e.g. `invalid_argument` (400) or `not_found` (404).",
    },
    message: {
      type: "string",
      maxLength: 1025,
      description: "What went wrong, for people; a 400 names the offending field first (`field: problem`). At most 1024 characters and an ellipsis.",
    },
    details: {
      type: "array",
      description: "Typed error details as Connect encodes them; empty today.",
      items: {
        type: "object",
        properties: { type: { type: "string" }, value: { type: "string", contentEncoding: "base64" }, debug: {} },
        required: ["type", "value"],
      },
    },
  },
  required: ["code", "message", "details"],
  additionalProperties: false,
};

/** Each error status a route may answer, by its response component name, with when it happens. */
export const ERROR_RESPONSES = {
  BadRequest: { status: "400", text: "INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE: the request is malformed, names an unknown field or parameter, or a field's value is refused (the message names the field)." },
  Unauthenticated: { status: "401", text: "UNAUTHENTICATED: no API key, or one that is unknown or revoked." },
  PermissionDenied: { status: "403", text: "PERMISSION_DENIED: the caller's key or role may not do this." },
  NotFound: { status: "404", text: "NOT_FOUND: the resource does not exist or is not visible to the caller (the two are not told apart)." },
  Conflict: { status: "409", text: "ALREADY_EXISTS or ABORTED: the request conflicts with the current state." },
  MethodNotAllowed: { status: "405", text: "UNIMPLEMENTED: the path exists, but not with this HTTP method." },
  Gone: { status: "410", text: "The route was removed; the message names its replacement." },
  PayloadTooLarge: { status: "413", text: "RESOURCE_EXHAUSTED: the request body is larger than the server's limit." },
  TooManyRequests: {
    status: "429",
    text:
      "RESOURCE_EXHAUSTED: a quota or limit was reached (the message names it). Past the per-key rate limit (SERVICE_RATE_LIMIT_PER_SECOND) " +
      "the answer carries `Retry-After` (seconds) and the `RateLimit` / `RateLimit-Policy` fields.",
  },
  ServerError: {
    status: "5XX",
    text:
      "INTERNAL/UNKNOWN/DATA_LOSS (500), UNIMPLEMENTED (501), UNAVAILABLE (503), DEADLINE_EXCEEDED (504), or RESOURCE_EXHAUSTED (507 Insufficient " +
      "Storage): a write refused because the store reached SERVICE_MAX_STORE_BYTES; nothing of it was stored.",
  },
} as const;

export type ErrorResponseName = keyof typeof ERROR_RESPONSES;

/** `components.responses` for every error status, each a description and the one error body. */
export function errorResponseComponents(): JsonObject {
  const content = { "application/json": { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA_NAME}` } } };
  return Object.fromEntries(Object.entries(ERROR_RESPONSES).map(([name, { text }]) => [name, { description: text, content }]));
}

export function errorSchema(): JsonObject {
  return ERROR_SCHEMA;
}

/** The `responses` entries of these error statuses, as `$ref`s to their components. */
export function errorResponseRefs(names: readonly ErrorResponseName[]): JsonObject {
  return Object.fromEntries(names.map((name) => [ERROR_RESPONSES[name].status, { $ref: `#/components/responses/${name}` }]));
}
