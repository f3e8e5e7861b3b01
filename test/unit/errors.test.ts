import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { codeFromName, codeName, gone, HTTP_STATUS_BY_CODE, HTTP_STATUS_HEADER, httpStatusOf } from "../../src/platform/errors.js";

describe("the code → HTTP status table", () => {
  it("maps the codes the API uses as documented", () => {
    expect(httpStatusOf(Code.InvalidArgument)).toBe(400);
    expect(httpStatusOf(Code.Unauthenticated)).toBe(401);
    expect(httpStatusOf(Code.PermissionDenied)).toBe(403);
    expect(httpStatusOf(Code.NotFound)).toBe(404);
    expect(httpStatusOf(Code.AlreadyExists)).toBe(409);
    expect(httpStatusOf(Code.FailedPrecondition)).toBe(400);
    expect(httpStatusOf(Code.Aborted)).toBe(409);
    expect(httpStatusOf(Code.ResourceExhausted)).toBe(429);
    expect(httpStatusOf(Code.Unimplemented)).toBe(501);
    expect(httpStatusOf(Code.Unavailable)).toBe(503);
    expect(httpStatusOf(Code.Internal)).toBe(500);
  });
  it("agrees with the Connect protocol for every code, so all transports share one table", () => {
    for (const code of Object.keys(HTTP_STATUS_BY_CODE).map(Number) as Code[]) {
      expect(httpStatusOf(code), Code[code]).toBe(codeToHttpStatus(code));
    }
  });
  it("names codes in snake_case both ways", () => {
    expect(codeName(Code.InvalidArgument)).toBe("invalid_argument");
    expect(codeName(Code.DeadlineExceeded)).toBe("deadline_exceeded");
    expect(codeFromName("permission_denied")).toBe(Code.PermissionDenied);
    expect(codeFromName("no_such_code")).toBe(Code.Unknown);
  });
  it("marks removed routes for a 410", () => {
    const error = gone("/v2/core/sdm/write", "/v2/core/insert");
    expect(error.code).toBe(Code.Unimplemented);
    expect(error.metadata.get(HTTP_STATUS_HEADER)).toBe("410");
  });
});
