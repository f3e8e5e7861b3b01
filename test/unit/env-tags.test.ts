// The env-tag syntax and re-ranking stage on their own.
import { describe, expect, it } from "vitest";
import {
  ENV_TAG_CONFLICT_FACTOR,
  ENV_TAG_MATCH_FACTOR,
  envTagFactor,
  parseEnvTag,
  rerankByEnvTags,
  type EnvTag,
} from "../../src/retrieval/env-tags.js";
import type { Hit } from "../../src/retrieval/search-engine.js";

const tags = (...texts: string[]): EnvTag[] => texts.map((t) => parseEnvTag(t) as EnvTag);

function hit(id: string, score: number, envTags: string[], mode: Hit["mode"] = "semantic"): Hit {
  return {
    entry: { id, envTags } as unknown as Hit["entry"],
    score,
    mode,
    overlap: 0,
    similarity: 0,
    parts: { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights: {} },
  };
}

describe("parseEnvTag", () => {
  it("reads TYPE:NAME and TYPE:NAME:VERSION, lowercase, and refuses anything else", () => {
    expect(parseEnvTag("Lang:Python:3.12")).toEqual({ key: "lang:python", version: "3.12" });
    expect(parseEnvTag("os:linux/arm64")).toEqual({ key: "os:linux/arm64", version: "" });
    for (const bad of ["python", "lang:", ":python", "a:b:c:d", "lang:py thon", ""]) expect(parseEnvTag(bad), bad).toBeUndefined();
  });
});

describe("envTagFactor", () => {
  it("matches equal, absent and dotted-prefix versions; conflicts on other versions; ignores other names", () => {
    expect(envTagFactor(tags("lang:python:3.12"), ["lang:python:3.12"])).toBe(ENV_TAG_MATCH_FACTOR);
    expect(envTagFactor(tags("lang:python:3.12"), ["lang:python"])).toBe(ENV_TAG_MATCH_FACTOR);
    expect(envTagFactor(tags("lang:python"), ["lang:python:2.7"])).toBe(ENV_TAG_MATCH_FACTOR);
    expect(envTagFactor(tags("lang:python:3"), ["lang:python:3.12"])).toBe(ENV_TAG_MATCH_FACTOR);
    expect(envTagFactor(tags("lang:python:3.1"), ["lang:python:3.12"])).toBe(ENV_TAG_CONFLICT_FACTOR);
    expect(envTagFactor(tags("lang:python:3.12"), ["lang:python:2.7"])).toBe(ENV_TAG_CONFLICT_FACTOR);
    expect(envTagFactor(tags("lang:python:3.12"), ["lang:rust:1.80", "not a tag"])).toBe(1);
    expect(envTagFactor(tags("lang:python:3.12"), [])).toBe(1);
  });

  it("multiplies per caller tag, and a match on one version of the name wins over a conflict on another", () => {
    expect(envTagFactor(tags("lang:python:3.12", "os:linux"), ["lang:python:3.12", "os:linux:6.1"])).toBeCloseTo(ENV_TAG_MATCH_FACTOR ** 2);
    expect(envTagFactor(tags("lang:python:3.12", "os:linux:6"), ["lang:python:3.12", "os:linux:5.15"])).toBeCloseTo(
      ENV_TAG_MATCH_FACTOR * ENV_TAG_CONFLICT_FACTOR,
    );
    expect(envTagFactor(tags("lang:python:3.12"), ["lang:python:2.7", "lang:python:3.12"])).toBe(ENV_TAG_MATCH_FACTOR);
  });
});

describe("rerankByEnvTags", () => {
  it("re-sorts by adjusted score, keeps exact references first and ties in their order, and never changes the set", () => {
    const hits = [hit("ref", 5, [], "exact_reference"), hit("a", 1, []), hit("b", 1, ["lang:python:3.12"]), hit("c", 1.02, ["lang:python:2.7"]), hit("d", 1, [])];
    const ranked = rerankByEnvTags(hits, tags("lang:python:3.12"));
    expect(ranked.map((h) => h.entry.id)).toEqual(["ref", "b", "a", "d", "c"]);
    expect(ranked.find((h) => h.entry.id === "b")?.score).toBeCloseTo(1.1);
    expect(rerankByEnvTags(hits, []).map((h) => h.entry.id)).toEqual(["ref", "a", "b", "c", "d"]);
  });
});
