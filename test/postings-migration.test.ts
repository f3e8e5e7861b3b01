// A store written by an earlier build keeps its BM25 postings one key per term and entry; start-up moves them into
// per-entry term records, and lexical search finds the same entries afterwards.
import path from "node:path";
import { open } from "lmdb";
import { expect, it } from "vitest";
import { startTestServer, tempDataDir } from "./harness/server.js";
import { restCaller } from "./harness/callers.js";
import { RPC, evidenceOf, idsOf, ingestAndWait, ok } from "./harness/memory.js";

it("moves postings of an earlier build into per-entry term records at start-up", async () => {
  const dataDir = tempDataDir();
  let server = await startTestServer({}, dataDir);
  const adminKey = server.adminKey;
  const ids = await ingestAndWait(restCaller(server.baseUrl), adminKey, "legacy", [
    { text: "The zeppelin hangar opens at dawn." },
    { text: "Quartz crystals hum in the basement." },
  ]);
  await server.close();

  // Rewrite the store as the earlier build left it: postings keyed [term, seq], no per-entry term records.
  const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false });
  const postings = root.openDB<number, [string, number]>({ name: "postings" });
  const entryTerms = root.openDB<{ terms: string[]; tfs: number[] }, number>({ name: "entry_terms" });
  await root.transaction(() => {
    for (const { key, value } of entryTerms.getRange()) {
      value.terms.forEach((term, i) => postings.put([term, key], value.tfs[i] as number));
      entryTerms.remove(key);
    }
  });
  expect(entryTerms.getCount()).toBe(0);
  expect(postings.getCount()).toBeGreaterThan(4);
  await root.close();

  server = await startTestServer({ SERVICE_ADMIN_KEY: adminKey }, dataDir);
  const rest = restCaller(server.baseUrl);
  const found = idsOf(evidenceOf(await ok(rest, RPC.query, { run_id: "legacy", query: "zeppelin hangar", limit: 1 }, adminKey)));
  expect(found).toEqual([ids[0]]);
  const stats = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, adminKey);
  const count = (name: string): number => Number((stats["databases"] as { name: string; key_count: string }[]).find((d) => d.name === name)?.key_count);
  expect(count("postings")).toBe(0);
  expect(count("entry_terms")).toBe(2);
  await server.close();
});
