// The near-duplicate test consolidation applies: equal text merges; identifiers, negations and numbers keep two facts
// apart even when their words and vectors are all but the same.
import { describe, expect, it } from "vitest";
import { identifiersOf, isNearDuplicate, keepsFirst } from "../../src/memory/near-duplicate.js";
import { jaccard, words } from "../../src/retrieval/text.js";

const TAIL = " as the runbook the platform team published last quarter says for every production service";

describe("isNearDuplicate", () => {
  it("merges text equal up to white space and a final stop, and a case change of a word", () => {
    expect(isNearDuplicate("The cache warms up  in ninety seconds.", "The cache warms up in ninety seconds", 0)).toBe(true);
    expect(isNearDuplicate(`Deploys happen on Tuesday${TAIL}`, `deploys happen on Tuesday${TAIL}`, 0.99)).toBe(true);
  });

  it("keeps apart pairs whose words overlap almost fully but whose identifiers, negations or numbers differ", () => {
    const pairs: [string, string][] = [
      ["Postgres listens on port 5432", "Postgres listens on port 5433"],
      ["The regression came with commit 9f3c2a1e", "The regression came with commit 9f3c2a1f"],
      ["Logs go to /var/log/engram/worker.log", "Logs go to /var/log/engram/worker2.log"],
      ["Set FEATURE_CHECKOUT=true in the web tier", "Set FEATURE_CHECKOUT=false in the web tier"],
      ["The export should run on weekends", "The export should not run on weekends"],
      ["Requests time out after 30 seconds", "Requests time out after 300 seconds"],
    ];
    for (const [a, b] of pairs) {
      // Words alone would merge them (the shared tail), and so would vectors (cosine 1 is passed).
      expect(jaccard(new Set(words(a + TAIL)), new Set(words(b + TAIL)))).toBeGreaterThanOrEqual(0.85);
      expect(isNearDuplicate(a + TAIL, b + TAIL, 1), `${a} / ${b}`).toBe(false);
    }
  });

  it("needs very close vectors and high word overlap", () => {
    expect(isNearDuplicate(`Deploys happen on Tuesday${TAIL}`, `Deploys happen every Tuesday${TAIL}`, 0.9)).toBe(false);
    expect(isNearDuplicate(`Deploys happen on Tuesday${TAIL}`, `Deploys happen every Tuesday${TAIL}`, 0.99)).toBe(true);
    expect(isNearDuplicate("Deploys happen on Tuesday", "Releases are cut on Tuesday", 0.99)).toBe(false);
  });

  it("reads identifiers as written, without the sentence's punctuation around them", () => {
    expect([...identifiersOf("Use db-1.internal:5432, then (v2.3.1).")].sort()).toEqual(["db-1.internal:5432", "v2.3.1"]);
    expect([...identifiersOf("call getUserById now")]).toEqual(["getUserById"]);
  });

  it("keeps the more complete wording, else the older entry", () => {
    expect(keepsFirst({ content: "a b c", seq: 9 }, { content: "a b", seq: 1 })).toBe(true);
    expect(keepsFirst({ content: "a b", seq: 1 }, { content: "a c", seq: 2 })).toBe(true);
    expect(keepsFirst({ content: "a b", seq: 3 }, { content: "a c", seq: 2 })).toBe(false);
  });
});
