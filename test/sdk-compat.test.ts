// An existing client of this interface, the public @mubit-ai/sdk, works against Engram over HTTP unchanged.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { startTestServer, type TestServer } from "./harness/server.js";

let server: TestServer;
let client: InstanceType<typeof Client>;

beforeAll(async () => {
  server = await startTestServer();
  client = new Client({ transport: "http", endpoint: server.baseUrl, api_key: server.adminKey, run_id: "sdk-run" });
});
afterAll(async () => server.close());

it("remember (ingest + job polling) and recall (query) round-trip", async () => {
  const job = (await client.remember({ session_id: "sdk-run", content: "The staging database listens on port 5433." })) as { status: string; done: boolean };
  expect(job).toMatchObject({ status: "completed", done: true });
  const lesson = (await client.remember({
    session_id: "sdk-run",
    agent_id: "sdk-quickstart",
    content: "Cache invalidation failures usually show up after stale token reuse.",
    intent: "lesson",
    lesson_type: "failure",
    lesson_scope: "session",
  })) as { status: string };
  expect(lesson.status).toBe("completed");
  const answer = (await client.recall({ session_id: "sdk-run", query: "Which port does the staging database listen on?" })) as {
    final_answer: string;
    citations: number[];
    evidence: { content: string }[];
  };
  expect(answer.final_answer).toContain("5433");
  expect(answer.citations).toEqual([0]);
  const lessons = (await client.recall({ session_id: "sdk-run", query: "stale token reuse", entry_types: ["lesson"] })) as { evidence: { content: string; origin_entry_type: string }[] };
  expect(lessons.evidence.map((e) => e.origin_entry_type)).toEqual(["lesson"]);
});

it("context, archive, dereference, checkpoint, memory health and health", async () => {
  const context = (await client.getContext({ session_id: "sdk-run", query: "staging database" })) as { context_block: string };
  expect(context.context_block).toContain("5433");
  const archived = (await client.archive({ session_id: "sdk-run", content: "exact bytes ✓", artifact_kind: "log" })) as { reference_id: string };
  const fetched = (await client.dereference({ session_id: "sdk-run", reference_id: archived.reference_id })) as { content: string; found: boolean };
  expect(fetched).toMatchObject({ found: true, content: "exact bytes ✓" });
  const checkpoint = (await client.checkpoint({ session_id: "sdk-run", context_snapshot: "window", label: "pre-compaction" })) as { checkpoint_id: string };
  expect(checkpoint.checkpoint_id).toMatch(/^chk_/);
  const health = (await client.memoryHealth({ session_id: "sdk-run" })) as { entry_counts: Record<string, number> };
  expect(health.entry_counts).toMatchObject({ fact: 1, lesson: 1, archive_block: 1, checkpoint: 1 });
  expect(await client.auth.health()).toBe("OK");
});

it("recall sends agent_id, env_tags and include_linked_runs: each has its documented effect", async () => {
  // The SDK sends env_tags although its RecallOptions type does not declare them.
  const options = { session_id: "sdk-run", query: "Which port does the staging database listen on?", agent_id: "sdk-agent", env_tags: ["db:postgres:16"] };
  const answer = (await client.recall(options)) as { final_answer: string; routing_summary: string };
  expect(answer.final_answer).toContain("5433");
  expect(answer.routing_summary).toContain('asked by agent "sdk-agent"');
  const linked = await client.recall({ session_id: "sdk-run", query: "staging database", include_linked_runs: true }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(linked).toBeInstanceOf(Error);
  expect((linked as Error).message).toContain("include_linked_runs");
});
