// Situations are matched by meaning with a remote (OpenAI-compatible) embedder too: before ranking, the question's
// parts and the scope's lesson situations are embedded through the endpoint as failure signatures. The endpoint here
// is a toy model started by the test on loopback that knows a few synonyms — as a real model would, it puts a failure
// worded otherwise next to the original — so the paraphrase below is found only by meaning. When the endpoint fails,
// the question is still answered, by words.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { restCaller, type JsonObject } from "./harness/callers.js";
import { RPC, idsOf, ingestAndWait, ok } from "./harness/memory.js";
import { createUser } from "./harness/users.js";
import { terms } from "../src/retrieval/text.js";

const DIMENSIONS = 16;
/** The toy model's meanings: words of one group embed alike; any other word falls in a bucket by its length. */
const SYNONYMS: readonly (readonly string[])[] = [
  ["mail", "email", "message", "letter", "newsletter"],
  ["server", "gateway", "relay"],
  ["rejected", "denied", "refused", "bounced"],
  ["inbox", "mailbox"],
  ["full", "space", "quota", "left"],
  ["recipient", "user", "addressee"],
];
let fake: http.Server;
let server: TestServer;
const seenInputs: string[] = [];
let failing = false;

function embed(text: string): number[] {
  const v = new Array<number>(DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const group = SYNONYMS.findIndex((g) => g.includes(word));
    v[group >= 0 ? group : SYNONYMS.length + (word.length % (DIMENSIONS - SYNONYMS.length))]! += 1;
  }
  return v;
}

const MAIL_ERROR = "2026-03-02T09:14:07Z ERROR mail server rejected the message: recipient inbox has no space left";
/** The same failure from another tool, in another log format, sharing no index term with MAIL_ERROR. */
const MAIL_PARAPHRASE = "W0317 11:02:17.482113 4411 relay.go:88] email gateway denied the letter: user mailbox full";

beforeAll(async () => {
  fake = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (failing) {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "model overloaded" } }));
        return;
      }
      const { input, model } = JSON.parse(body) as { input: string[]; model: string };
      seenInputs.push(...input);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model, data: input.map((text, index) => ({ index, embedding: embed(text) })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  server = await startTestServer({ SERVICE_EMBEDDINGS_URL: url, SERVICE_EMBEDDINGS_MODEL: "toy-synonyms", SERVICE_EMBEDDINGS_MAX_RETRIES: "0" });
});

afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => fake.close(() => resolve()));
});

it("finds a lesson of another run for a failure worded otherwise through the remote embedder, and answers by words when it fails", async () => {
  const c = restCaller(server.baseUrl);
  const key = await createUser(server.baseUrl, server.adminKey, "remote-situations");
  const mailRun = [
    "task: Deliver the monthly newsletter to the subscriber list",
    MAIL_ERROR,
    "action: archived the oldest messages to free room, then resent the newsletter",
    "result: the newsletter was delivered, the fix worked",
  ].map((text) => ({ text, entry_type: "trace" }));
  const ids = await ingestAndWait(c, key, "mail-a", mailRun);
  await ok(c, "engram.v2.LearningService/Reflect", { run_id: "mail-a" }, key);
  const lessons = (await ok(c, "engram.v2.LearningService/ListLessons", { run_id: "mail-a" }, key))["lessons"] as JsonObject[];
  const lesson = lessons.find((l) => (l["source_entry_ids"] as string[]).includes(ids[1] as string));
  expect(lesson, JSON.stringify(lessons)).toBeDefined();
  const id = String(lesson?.["id"]);
  await ok(c, "engram.v2.LearningService/RecordOutcome", { run_id: "mail-a", reference_id: id, outcome: "success" }, key);

  // Nothing but meaning joins the two failures.
  const shared = terms(MAIL_PARAPHRASE).filter((t) => new Set(terms(`${MAIL_ERROR} ${String(lesson?.["content"])}`)).has(t));
  expect(shared).toEqual([]);
  const question = `Send the quarterly invoice digest to customers\n${MAIL_PARAPHRASE}`;
  const context = async (): Promise<string[]> => idsOf((await ok(c, RPC.context, { run_id: "mail-b", query: question, max_token_budget: 4000 }, key))["sources"] as JsonObject[]);
  expect(await context()).toContain(id);
  // The endpoint was asked for the failure signatures: timestamps, log prefix and file position taken out.
  expect(seenInputs).toContain("email gateway denied the letter user mailbox full");
  expect(seenInputs).toContain("mail server rejected the message recipient inbox has no space left");

  // Another failure is not this lesson's situation.
  const unrelated = await ok(c, RPC.context, { run_id: "tls-b", query: "Publish the pricing feed\nx509: certificate has expired or is not yet valid", max_token_budget: 4000 }, key);
  expect(idsOf(unrelated["sources"] as JsonObject[])).not.toContain(id);

  // The endpoint down: the question is still answered (by words), without the lesson it could only find by meaning.
  // A positive outcome in a run that met a failure still applies; only the situation it would add (which needs the
  // lesson's vector made again) is left out, so the lesson's metadata and index never disagree.
  await ingestAndWait(c, key, "mail-d", [{ text: MAIL_PARAPHRASE, entry_type: "trace" }]);
  const situations = async (): Promise<unknown> => {
    const body = await ok(c, "engram.v2.MemoryService/ListActivity", { run_id: "mail-a", entry_types: ["lesson"], limit: 50 }, key);
    const entry = (body["entries"] as JsonObject[]).find((e) => e["id"] === id);
    return (JSON.parse(String(entry?.["metadata_json"])) as Record<string, unknown>)["situations"];
  };
  const before = await situations();
  failing = true;
  try {
    const body = await ok(c, RPC.context, { run_id: "mail-c", query: `Deliver the monthly newsletter\n${MAIL_ERROR}`, max_token_budget: 4000 }, key);
    expect(body["context_block"]).toEqual(expect.any(String));
    const credited = await ok(c, "engram.v2.LearningService/RecordOutcome", { run_id: "mail-d", outcome: "success", entry_ids: [id], rationale: "the lesson fixed it" }, key);
    expect(credited).toMatchObject({ success: true, entries_reinforced: 1, credits: [{ entry_id: id, effect: "reinforced", reason: "" }] });
  } finally {
    failing = false;
  }
  expect(await situations()).toEqual(before);
});
