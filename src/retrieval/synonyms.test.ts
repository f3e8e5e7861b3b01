// The synonym table as retrieval reads it: by index term, both ways, only what WordNet and the word vectors agree on.
import { describe, expect, it } from "vitest";
import { Synonyms } from "./synonyms.js";
import { terms } from "./text.js";

const term = (word: string): string => {
  const [only] = terms(word);
  if (only === undefined) throw new Error(`"${word}" has no index term`);
  return only;
};

describe("Synonyms", async () => {
  const table = await Synonyms.load();

  it("answers by index term, so any inflection of a word finds its relatives", () => {
    expect(table.size).toBeGreaterThan(5_000);
    expect(table.of(term("refused")).synonyms).toContain(term("rejected"));
    expect(table.of(term("rejects")).synonyms).toContain(term("refusing"));
    expect(table.of(term("credentials")).synonyms).toContain(term("certificate"));
    expect(table.of(term("permission")).synonyms).toContain(term("permit"));
  });

  it("keeps derived forms apart from synonyms", () => {
    const denied = table.of(term("denied"));
    expect(denied.related).toContain(term("denial"));
    expect(denied.synonyms).not.toContain(term("denial"));
    expect(table.of(term("failed")).related).toContain(term("failure"));
  });

  it("is symmetric and never relates a term to itself", () => {
    for (const word of ["refuse", "error", "permission", "secret", "ready"]) {
      const own = term(word);
      const { synonyms, related } = table.of(own);
      expect([...synonyms, ...related]).not.toContain(own);
      for (const other of synonyms) expect(table.of(other).synonyms).toContain(own);
      for (const other of related) expect(table.of(other).related).toContain(own);
    }
  });

  it("leaves out senses the word vectors do not confirm, and words it does not know", () => {
    // WordNet's "live" ~ "keep" and "return" ~ "render" are real senses, but not what the words mean in common use.
    expect(table.of(term("live")).synonyms).not.toContain(term("keep"));
    expect(table.of(term("return")).synonyms).not.toContain(term("render"));
    expect(table.of("xfrin")).toEqual({ synonyms: [], related: [] });
    expect(table.of("")).toEqual({ synonyms: [], related: [] });
    expect(table.of("zzzzzz")).toEqual({ synonyms: [], related: [] });
  });

  it("parses a table it is given and refuses another format", () => {
    const small = Synonyms.parse(new TextEncoder().encode("engram-synonyms 1 test\nalpha\tbeta\t\nbeta\talpha\tgamma\ngamma\t\tbeta\n"));
    expect(small.size).toBe(3);
    expect(small.of("alpha")).toEqual({ synonyms: ["beta"], related: [] });
    expect(small.of("beta")).toEqual({ synonyms: ["alpha"], related: ["gamma"] });
    expect(small.of("gamma")).toEqual({ synonyms: [], related: ["beta"] });
    expect(small.of("alph")).toEqual({ synonyms: [], related: [] });
    expect(small.of("betas")).toEqual({ synonyms: [], related: [] });
    expect(Synonyms.EMPTY.of("alpha")).toEqual({ synonyms: [], related: [] });
    expect(() => Synonyms.parse(new TextEncoder().encode("something else\nalpha\tbeta\t\n"))).toThrow(/invalid synonym table/);
  });
});
