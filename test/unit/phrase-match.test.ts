// What the phrase stage counts as holding a query's order: whole words in sequence with only punctuation or space
// between them, the whole query as written, in any script; never a word inside another word.
import { describe, expect, it } from "vitest";
import { orderShare, wordPairs } from "../../src/retrieval/ranking/phrase-match.js";

const share = (query: string, content: string): number => orderShare(query.toLowerCase(), wordPairs(query), content);

describe("phrase match", () => {
  it("keeps no pair of two stopwords", () => {
    expect(wordPairs("it is an issue here")).toEqual([["an", "issue"], ["issue", "here"]]);
  });

  it("counts pairs across punctuation and the whole query as written", () => {
    expect(share("lock released", "the LOCK -- released.")).toBeCloseTo(1 / 2);
    expect(share("lock released", "then lock released")).toBe(1);
    expect(share("separability_matrix", "separability matrix")).toBeCloseTo(1 / 2);
    expect(share("separability_matrix", "from m import separability_matrix")).toBe(1);
  });

  it("never matches inside a word or out of order", () => {
    expect(share("lock released", "blocked released")).toBe(0);
    expect(share("lock released", "lock unreleased")).toBe(0);
    expect(share("lock released", "released lock")).toBe(0);
  });

  it("reads words of any script", () => {
    expect(share("größe überschritten", "Fehler: Größe überschritten")).toBe(1);
    expect(share("größe überschritten", "Fehler: großeüberschritten")).toBe(0);
  });
});
