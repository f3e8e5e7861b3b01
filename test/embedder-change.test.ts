// Changing the embedder re-embeds every stored entry at start-up: vectors of different models never mix.
import { expect, it } from "vitest";
import { startTestServer, tempDataDir } from "./harness/server.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { openStorage } from "../src/storage/database.js";
import { EntryStore } from "../src/storage/entry-store.js";

async function post(baseUrl: string, key: string, route: string, body: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

it("re-embeds stored entries when the embedder changes, and caller vectors follow the new dimension", async () => {
  const dataDir = tempDataDir();
  const admin = mintApiKey("local").key;
  const hashed = await startTestServer({ SERVICE_ADMIN_KEY: admin, SERVICE_EMBEDDER: "hashed", SERVICE_CORE_ALLOW_ALL: "true" }, dataDir);
  await post(hashed.baseUrl, admin, "/v2/control/remember", { session_id: "e", content: "Backups run nightly at two in the morning." });
  const node = await post(hashed.baseUrl, admin, "/v2/core/insert", { run_id: "e", text: "Backups run nightly." });
  expect(node.status).toBe(200);
  const nodeId = String(node.json["node_id"]);
  // The hashed embedder has 384 dimensions: a 100-dimension vector is refused.
  const wrong = await post(hashed.baseUrl, admin, "/v2/control/query", { run_id: "e", query: "backups", embedding: new Array(100).fill(0.1) });
  expect(wrong.status).toBe(400);
  expect(String(wrong.json["message"])).toContain("embedding");
  await hashed.close();

  const wordvec = await startTestServer({ SERVICE_ADMIN_KEY: admin, SERVICE_EMBEDDER: "wordvec", SERVICE_CORE_ALLOW_ALL: "true" }, dataDir);
  try {
    // Core nodes with text are re-embedded too.
    const reembedded = await fetch(`${wordvec.baseUrl}/v2/core/node/${nodeId}`, { headers: { authorization: `Bearer ${admin}` } });
    expect(((await reembedded.json()) as { node: { vector: number[] } }).node.vector).toHaveLength(100);
    const byText = await post(wordvec.baseUrl, admin, "/v2/control/query", { run_id: "e", query: "When do backups run?" });
    expect(byText.status).toBe(200);
    expect((byText.json["evidence"] as { content: string }[])[0]?.content).toBe("Backups run nightly at two in the morning.");
    // The word-vector embedder has 100 dimensions, and the stored entry was re-embedded with it.
    const byVector = await post(wordvec.baseUrl, admin, "/v2/control/query", {
      run_id: "e",
      query: "nightly backups",
      embedding: new Array(100).fill(0.1),
      explain: true,
    });
    expect(byVector.status).toBe(200);
    const top = (byVector.json["evidence"] as { explain_info: { semantic_score: number } }[])[0];
    expect(top?.explain_info.semantic_score).toBeGreaterThanOrEqual(0);
    const tooLong = await post(wordvec.baseUrl, admin, "/v2/control/query", { run_id: "e", query: "x", embedding: new Array(384).fill(0.1) });
    expect(tooLong.status).toBe(400);
  } finally {
    await wordvec.close();
  }
  // The stored vector itself is now the new model's.
  const storage = openStorage(dataDir);
  try {
    expect(new EntryStore(storage).vector(1)?.length).toBe(100);
    expect(storage.dbs.meta.get("embedder_id")).toBe("wordvec-sg100d-v1");
  } finally {
    await storage.close();
  }
});
