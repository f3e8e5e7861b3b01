// A question that names a time favours what happened then: entries with the same text, written in other months,
// rank below the one whose occurrence time falls in the period the question names — resolved against the run's
// newest entry, on every transport.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRANSPORTS, callerFor, restCaller } from "./harness/callers.js";
import { RPC, evidenceOf, idsOf, ingestAndWait, ok } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const RUN = "time-run";
const MONTHS = ["2023-04-20T09:00:00Z", "2023-05-20T09:00:00Z", "2023-06-20T09:00:00Z", "2023-07-20T09:00:00Z", "2023-08-20T09:00:00Z"];

describe("time search", () => {
  let server: TestServer;
  let key: string;
  let ids: string[];

  beforeAll(async () => {
    server = await startTestServer();
    key = await createUser(server.baseUrl, server.adminKey, "time-search");
    const items = MONTHS.map((iso) => ({ text: "Melanie: we went camping by the lake again", entry_type: "trace", occurrence_time: Date.parse(iso) / 1000 }));
    ids = await ingestAndWait(restCaller(server.baseUrl), key, RUN, items);
  });

  afterAll(async () => {
    await server.close();
  });

  for (const transport of TRANSPORTS) {
    it(`ranks what happened in the named month first (${transport})`, async () => {
      const c = callerFor(transport, server.baseUrl, server.port);
      for (const [month, index] of [["June", 2], ["May", 1], ["April", 0]] as const) {
        const body = await ok(c, RPC.query, { run_id: RUN, query: `When did Melanie go camping in ${month}?`, limit: 5 }, key);
        expect(idsOf(evidenceOf(body))[0], month).toBe(ids[index]);
      }
    });
  }
});
