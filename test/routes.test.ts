// Walks every route of the spec: none may answer 404 for want of a route; those still unbuilt answer 501.
import { afterAll, beforeAll, expect, it } from "vitest";
import { SPEC_ROUTES } from "./harness/spec-routes.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

let server: TestServer;
beforeAll(async () => {
  // Every policy gate open, so that each route's own validation is what answers.
  server = await startTestServer({
    SERVICE_CORE_ALLOW_ALL: "true",
    SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
    SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true",
  });
  await createUser(server.baseUrl, server.adminKey, "walker");
});
afterAll(async () => server.close());

/** Path parameters that name something that exists, so a 404 could only mean a missing route. */
const PARAMS: Record<string, string> = { username: "walker", id: "1", job_id: "job_1", run_id: "run-1", session_id: "sess-1" };

it("every spec route is served (never a 404 for the route), and the unbuilt ones are listed", async () => {
  const unimplemented: string[] = [];
  for (const route of SPEC_ROUTES) {
    const path = route.path.replace(/:([a-z_]+)/g, (_m, name: string) => PARAMS[name] ?? "x");
    const abort = new AbortController();
    const response = await fetch(`${server.baseUrl}${path}`, {
      method: route.method,
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
      body: route.method === "POST" ? "{}" : undefined,
      signal: abort.signal,
    });
    const label = `${route.method} ${route.path}`;
    if (response.status === 404) {
      const body = (await response.json()) as { message: string };
      expect(body.message, label).not.toMatch(/^no route/);
    }
    expect([405, 500], label).not.toContain(response.status);
    if (response.status === 501) unimplemented.push(label);
    abort.abort();
  }
  console.info(`${unimplemented.length} of ${SPEC_ROUTES.length} spec routes still answer 501:\n  ${unimplemented.join("\n  ")}`);
  // Built already: health, auth, remember/recall, the control event stream and the SDM 410s.
  for (const built of ["POST /v2/control/remember", "POST /v2/control/recall", "GET /v2/control/events/subscribe", "POST /v2/core/sdm/write"]) {
    expect(unimplemented).not.toContain(built);
  }
});

/** Bodies of the wrong shape, types and sizes: every route must refuse them with a 4xx, never a 500. */
const MALFORMED_BODIES = [
  "null",
  "[]",
  '{"run_id": 5}',
  '{"run_id":"r","items":"x","limit":-1}',
  '{"run_id":"r","items":[null],"nodes":[{"vector":[0,0]}]}',
  '{"run_id":"r","query":{"a":1}}',
  '{"run_id":"r","query":"q","embedding":[1e400],"min_timestamp":"99999999999999999999"}',
  `{"run_id":"${"x".repeat(3000)}","session_id":"s","content":"x","page_token":"!!!","created_after":"yesterday"}`,
];

it("no spec route answers a server error to malformed input", async () => {
  const failures: string[] = [];
  for (const route of SPEC_ROUTES) {
    for (const param of ["0", "99999999999999999999999", "a%2Fb"]) {
      const path = route.path.replace(/:([a-z_]+)/g, () => param);
      for (const body of route.method === "POST" ? MALFORMED_BODIES : [undefined]) {
        const abort = new AbortController();
        const response = await fetch(`${server.baseUrl}${path}${route.method === "GET" ? "?limit=abc" : ""}`, {
          method: route.method,
          headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
          body,
          signal: abort.signal,
        });
        if (response.status >= 500 && response.status !== 501) failures.push(`${response.status} ${route.method} ${path} ${body ?? ""}`);
        abort.abort();
      }
    }
  }
  expect(failures).toEqual([]);
});
