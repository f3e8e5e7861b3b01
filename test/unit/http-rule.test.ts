import { describe, expect, it } from "vitest";
import { bindingsOf, HttpRuleError, parseTemplate, RouteTable } from "../../src/transport/gateway/http-rule.js";
import { CoreService } from "../../gen/engram/v2/core_service_pb.js";
import { AuthService } from "../../gen/engram/v2/auth_service_pb.js";
import { LearningService } from "../../gen/engram/v2/learning_service_pb.js";
import { HealthService } from "../../gen/engram/v2/health_service_pb.js";

const table = new RouteTable([CoreService, AuthService, LearningService, HealthService].flatMap((s) => s.methods.flatMap(bindingsOf)));

function matched(verb: string, path: string): string | undefined {
  const m = table.match(verb, path);
  return typeof m === "object" ? `${m.binding.method.name} ${JSON.stringify(m.pathParams)}` : m;
}

describe("path templates", () => {
  it("parses literals and variables", () => {
    expect(parseTemplate("/v2/core/node/{id}")).toEqual([{ literal: "v2" }, { literal: "core" }, { literal: "node" }, { variable: "id" }]);
  });
  it("rejects templates it cannot match", () => {
    expect(() => parseTemplate("v2/x")).toThrow(HttpRuleError);
    expect(() => parseTemplate("/v2/{name=**}")).toThrow(HttpRuleError);
    expect(() => parseTemplate("/v2//x")).toThrow(HttpRuleError);
  });
  it("reads additional bindings and response_body", () => {
    const loop = bindingsOf(LearningService.method.listLoopLessons);
    expect(loop.map((b) => `${b.verb} ${b.template}`)).toEqual(["POST /v2/loop/lessons", "GET /v2/loop/lessons"]);
    expect(bindingsOf(HealthService.method.livez)[0]?.responseBody).toBe("body");
  });
});

describe("route matching", () => {
  it("binds path variables, decoded", () => {
    expect(matched("GET", "/v2/core/node/42")).toBe('GetNode {"id":"42"}');
    expect(matched("POST", "/v2/core/auth/users/j%20doe/rotate_key")).toBe('RotateUserApiKey {"username":"j doe"}');
  });
  it("prefers literals over variables", () => {
    expect(matched("POST", "/v2/core/session/create")).toBe("CreateCoreSession {}");
    expect(matched("POST", "/v2/core/session/load")).toBe("LoadCoreSession {}");
    expect(matched("POST", "/v2/core/session/abc/commit")).toBe('CommitCoreSession {"id":"abc"}');
  });
  it("tells a wrong method from a missing route", () => {
    expect(matched("PUT", "/v2/core/node/42")).toBe("method_not_allowed");
    expect(matched("GET", "/v2/core/nothing")).toBeUndefined();
    expect(matched("GET", "/v2/core/node/")).toBeUndefined();
  });
  it("distinguishes verbs on one path", () => {
    expect(matched("GET", "/v2/core/memory/s1")).toBe('ReadScratchpad {"session_id":"s1"}');
    expect(matched("DELETE", "/v2/core/memory/s1")).toBe('ClearScratchpad {"session_id":"s1"}');
    expect(matched("GET", "/v2/loop/lessons")).toBe("ListLoopLessons {}");
  });
});
