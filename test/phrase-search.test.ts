// Text typed back finds the entry it came from: a few words of a log, an identifier, an error line rank the entry
// that holds them in that order above entries that hold the same words scattered, even when those hold them more
// often (what word counts alone prefer) — on every transport.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRANSPORTS, callerFor, restCaller } from "./harness/callers.js";
import { RPC, evidenceOf, idsOf, ingestAndWait, ok } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const RUN = "phrase-run";

/** Decoys: every word of the phrases, more than once, never in the phrases' order. */
const DECOYS = [
  "released lock: the loop retry exits; lock released before retry, loop exits again, the lock was released by retry",
  "matrix of separability: separability computed per matrix, separability matrix? no — the matrix, then separability",
  "error: connection pool refused; pool connection error, refused again; refused pool, connection error logged",
  "loop exits when the lock is released; retry before the loop; the retry exits the lock loop",
];
const HOLDERS = [
  "step 14: observed that the retry loop exits before the lock is released, so the next writer waits forever",
  "def separability_matrix(transform): return the boolean dependency of outputs on inputs",
  "2024-05-01T10:00:00Z worker-3 ERROR connection refused: pool exhausted after 30 s",
];

describe("phrase search", () => {
  let server: TestServer;
  let key: string;
  let holderIds: string[];

  beforeAll(async () => {
    server = await startTestServer();
    key = await createUser(server.baseUrl, server.adminKey, "phrase-search");
    const items = [...DECOYS, ...HOLDERS].map((text) => ({ text, entry_type: "trace" }));
    holderIds = (await ingestAndWait(restCaller(server.baseUrl), key, RUN, items)).slice(DECOYS.length);
  });

  afterAll(async () => {
    await server.close();
  });

  const firstFor = async (transport: (typeof TRANSPORTS)[number], query: string): Promise<string | undefined> => {
    const body = await ok(callerFor(transport, server.baseUrl, server.port), RPC.query, { run_id: RUN, query, limit: 5 }, key);
    return idsOf(evidenceOf(body))[0];
  };

  for (const transport of TRANSPORTS) {
    it(`ranks the entry holding the words in order first (${transport})`, async () => {
      expect(await firstFor(transport, "the retry loop exits before the lock is released")).toBe(holderIds[0]);
      expect(await firstFor(transport, "separability_matrix")).toBe(holderIds[1]);
      expect(await firstFor(transport, "ERROR connection refused: pool exhausted")).toBe(holderIds[2]);
    });
  }
});
