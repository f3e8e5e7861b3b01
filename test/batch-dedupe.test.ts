// BatchInsert's `deduplicate` over HTTP: an item repeating the text of a current entry of the same run, user and
// entry type is answered with that entry's id and not stored again; anything else is stored.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";

type Json = Record<string, unknown>;
interface ItemResult {
  readonly item_id: string;
  readonly success: boolean;
  readonly entry_id: string;
  readonly deduplicated: boolean;
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
});
afterAll(async () => server.close());

async function batch(body: Json): Promise<{ item_results: ItemResult[]; count: number }> {
  const response = await fetch(`${server.baseUrl}/v2/control/batch_insert`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { item_results: ItemResult[]; count: number };
}

async function total(runId: string): Promise<number> {
  const response = await fetch(`${server.baseUrl}/v2/control/activity`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: runId, limit: 1 }),
  });
  return ((await response.json()) as { total_visible: number }).total_visible;
}

it("deduplicates against current entries of the same run, user and type only", async () => {
  const stored = await batch({
    run_id: "dedup",
    items: [{ text: "The cache TTL is 300 seconds." }, { text: "Rotate keys monthly.", entry_type: "rule" }, { text: "Alice prefers dark mode.", user_id: "alice" }],
  });
  const ids = stored.item_results.map((r) => r.entry_id);
  expect(await total("dedup")).toBe(3);

  const again = await batch({
    run_id: "dedup",
    deduplicate: true,
    items: [
      { item_id: "same", text: "The cache TTL is 300 seconds." },
      { item_id: "other-type", text: "The cache TTL is 300 seconds.", entry_type: "rule" },
      { item_id: "same-rule", text: "Rotate keys monthly.", entry_type: "rule" },
      { item_id: "other-user", text: "Alice prefers dark mode.", user_id: "bob" },
      { item_id: "same-user", text: "Alice prefers dark mode.", user_id: "alice" },
      { item_id: "new", text: "Deploys happen on Tuesdays." },
      { item_id: "bad", text: "" },
    ],
  });
  const byId = Object.fromEntries(again.item_results.map((r) => [r.item_id, r]));
  expect(byId["same"]).toMatchObject({ success: true, deduplicated: true, entry_id: ids[0] });
  expect(byId["same-rule"]).toMatchObject({ success: true, deduplicated: true, entry_id: ids[1] });
  expect(byId["same-user"]).toMatchObject({ success: true, deduplicated: true, entry_id: ids[2] });
  for (const stored of ["other-type", "other-user", "new"]) {
    expect(byId[stored]).toMatchObject({ success: true, deduplicated: false });
    expect(ids).not.toContain(byId[stored]?.entry_id);
  }
  expect(byId["bad"]).toMatchObject({ success: false, deduplicated: false, entry_id: "" });
  expect(again.count).toBe(6);
  expect(await total("dedup")).toBe(6);
  // Another run holds none of them.
  const elsewhere = await batch({ run_id: "dedup-2", deduplicate: true, items: [{ text: "The cache TTL is 300 seconds." }] });
  expect(elsewhere.item_results[0]).toMatchObject({ deduplicated: false });
});
