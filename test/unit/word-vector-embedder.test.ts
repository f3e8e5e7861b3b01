import { beforeAll, describe, expect, it } from "vitest";
import { cosine } from "../../src/retrieval/embedder.js";
import { WordVectorEmbedder } from "../../src/retrieval/embedders/word-vector-embedder.js";

/** Builds an asset in the format scripts/derive-word-vectors.mjs writes. */
function asset(words: string[], rows: number[][], component: number[], sourceVocabulary = 1000): Buffer {
  const dims = component.length;
  const wordList = Buffer.from(words.map((w) => `${w}\n`).join(""), "utf8");
  const out = Buffer.alloc(24 + dims * 4 + rows.length * 4 + rows.length * dims + wordList.length);
  let offset = out.write("EGWV", 0, "latin1");
  for (const value of [1, rows.length, dims, sourceVocabulary, wordList.length]) offset = out.writeUInt32LE(value, offset);
  for (const value of component) offset = out.writeFloatLE(value, offset);
  const scales = rows.map((row) => Math.max(...row.map(Math.abs)) / 127 || 1);
  for (const scale of scales) offset = out.writeFloatLE(scale, offset);
  rows.forEach((row, i) => {
    for (const value of row) offset = out.writeInt8(Math.round(value / (scales[i] as number)), offset);
  });
  wordList.copy(out, offset);
  return out;
}

describe("WordVectorEmbedder on the committed asset", () => {
  let embedder: WordVectorEmbedder;
  const similarity = (a: string, b: string): number => cosine(embedder.embedOne(a), embedder.embedOne(b));

  beforeAll(async () => {
    embedder = await WordVectorEmbedder.load();
  });

  it("describes itself", () => {
    expect(embedder.id).toBe("wordvec-sg100d-v1");
    expect(embedder.dimensions).toBe(100);
    expect(embedder.vocabularySize).toBe(100_000);
  });

  it("returns independent unit vectors, the same for the same text, in input order", async () => {
    const texts = ["The cat rested on the carpet.", "A desk in the study.", "The cat rested on the carpet."];
    const [a, b, again] = await embedder.embed(texts);
    expect(a).toHaveLength(100);
    expect(Math.hypot(...(a as Float32Array))).toBeCloseTo(1, 5);
    expect(Array.from(again as Float32Array)).toEqual(Array.from(a as Float32Array));
    expect(cosine(a as Float32Array, b as Float32Array)).toBeLessThan(0.9);
    expect(Array.from(embedder.embedOne("A desk in the study."))).toEqual(Array.from(b as Float32Array));
  });

  it("gives the zero vector to a text with nothing but stopwords", () => {
    expect(embedder.embedOne("").every((x) => x === 0)).toBe(true);
    expect(embedder.embedOne("and of the, it was").every((x) => x === 0)).toBe(true);
  });

  it("places related meanings closer than unrelated ones, beyond shared words", () => {
    expect(similarity("The cat rested on the carpet.", "The kitten slept on the rug.")).toBeGreaterThan(
      similarity("The cat rested on the carpet.", "The desk was in the study room."),
    );
    expect(similarity("I bought a new car", "purchased an automobile")).toBeGreaterThan(
      similarity("I bought a new car", "we baked bread"),
    );
  });

  it("gives unknown words a spelling-based vector", () => {
    const unknown = embedder.embedOne("zorblaxian");
    expect(unknown.some((x) => x !== 0)).toBe(true);
    expect(similarity("zorblaxian", "zorblaxians")).toBeGreaterThan(0.5);
    expect(similarity("zorblaxian", "painting")).toBeLessThan(0.3);
  });

  it("weighs names inside a sentence and line labels less than the same word in lower case", () => {
    expect(similarity("Yesterday Rose painted", "rose")).toBeLessThan(similarity("yesterday rose painted", "rose"));
    expect(similarity("Rose: painted", "rose")).toBeLessThan(similarity("rose painted", "rose"));
    // Acronyms are topics, not names: the same weight whatever the case.
    expect(similarity("we met at the NASA office", "nasa")).toBeCloseTo(similarity("we met at the nasa office", "nasa"), 5);
  });

  it("judges each occurrence of a repeated word by its own place in the text", () => {
    // The second "Rose" opens a sentence, so it weighs as much as a lower-case "rose" there; the first, inside a
    // sentence, weighs less: the two texts must embed alike, and unlike one where both are inside sentences.
    const vector = (text: string): number[] => Array.from(embedder.embedOne(text));
    expect(vector("Yesterday Rose painted. Rose slept")).toEqual(vector("Yesterday Rose painted. rose slept"));
    expect(vector("Yesterday Rose painted. Rose slept")).not.toEqual(vector("Yesterday Rose painted, Rose slept"));
  });
});

describe("WordVectorEmbedder.parse", () => {
  it("averages known words and removes the stored common component", () => {
    const embedder = WordVectorEmbedder.parse(asset(["alpha", "beta"], [[1, 0], [0, 2]], [1, 0]));
    expect(embedder.dimensions).toBe(2);
    expect(Array.from(embedder.embedOne("alpha beta"))).toEqual([0, 1]);
    expect(Array.from(embedder.embedOne("alpha"))).toEqual([0, 0]);
  });

  it("looks a word up by its Porter stem when its surface form is missing", () => {
    const embedder = WordVectorEmbedder.parse(asset(["refresh", "other"], [[0, 1], [1, 0]], [0, 0]));
    expect(Array.from(embedder.embedOne("refreshes"))).toEqual([0, 1]);
  });

  it("rejects malformed assets", () => {
    const good = asset(["alpha"], [[1, 0]], [0, 0]);
    const badMagic = Buffer.from(good);
    badMagic.write("XXXX", 0, "latin1");
    const badVersion = Buffer.from(good);
    badVersion.writeUInt32LE(2, 4);
    expect(() => WordVectorEmbedder.parse(badMagic)).toThrow(/bad magic/);
    expect(() => WordVectorEmbedder.parse(badVersion)).toThrow(/version 2/);
    expect(() => WordVectorEmbedder.parse(good.subarray(0, good.length - 1))).toThrow(/bytes, expected/);
    expect(() => WordVectorEmbedder.parse(good.subarray(0, 10))).toThrow(/header/);
  });

  it("names a missing file", async () => {
    await expect(WordVectorEmbedder.load("/nonexistent/vectors.bin")).rejects.toThrow(/nonexistent/);
  });
});
