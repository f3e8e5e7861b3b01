// composeAnswer, the no-LLM answer: sentence choice, abstention, citation validity and confidence ordering.
import { describe, expect, it } from "vitest";
import { ABSTAIN_BELOW, ABSTENTION, composeAnswer, type Answer, type AnswerHit } from "../../src/retrieval/answer.js";

type Hit = AnswerHit;

function hit(_query: string, content: string, score: number): Hit {
  return { entry: { content }, score };
}

function expectValid(answer: Answer, hits: readonly Hit[]): void {
  expect(answer.confidence).toBeGreaterThanOrEqual(0);
  expect(answer.confidence).toBeLessThanOrEqual(1);
  expect(new Set(answer.citations).size).toBe(answer.citations.length);
  for (const i of answer.citations) {
    expect(Number.isInteger(i)).toBe(true);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(i).toBeLessThan(hits.length);
  }
  if (answer.finalAnswer === ABSTENTION) {
    expect(answer.citations).toEqual([]);
    expect(answer.confidence).toBeLessThan(ABSTAIN_BELOW);
  } else {
    expect(answer.citations.length).toBeGreaterThan(0);
    expect(answer.confidence).toBeGreaterThanOrEqual(ABSTAIN_BELOW);
  }
}

describe("composeAnswer", () => {
  it("answers with the sentence of the top evidence that covers the question", () => {
    const q = "When does the release train leave?";
    const hits = [
      hit(q, "Deploys are frozen on Fridays. The release train leaves every Thursday. Builds use the blue pool.", 0.8),
      hit(q, "Builds run on the blue runner pool.", 0.2),
    ];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe("The release train leaves every Thursday.");
    expect(answer.citations).toEqual([0]);
    expectValid(answer, hits);
  });

  it("prefers a statement over a question that only echoes the query", () => {
    const q = "When does the release train leave?";
    const hits = [hit(q, "When does the release train leave? It leaves on Thursday after the release train review.", 0.8)];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe("It leaves on Thursday after the release train review.");
    expectValid(answer, hits);
  });

  it("joins a second sentence from another hit when it covers what the first misses, citing both", () => {
    const q = "Which port and which host does the staging database use?";
    const hits = [
      hit(q, "The staging database listens on port 5433.", 0.7),
      hit(q, "The staging database host is db-staging.internal.", 0.6),
      hit(q, "The cafeteria opens at noon.", 0.1),
    ];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe("The staging database listens on port 5433. The staging database host is db-staging.internal.");
    expect(answer.citations).toEqual([0, 1]);
    expectValid(answer, hits);
  });

  it("does not pad the answer with a weakly related sentence from another hit", () => {
    const q = "What port does the staging database use?";
    const hits = [hit(q, "The staging database is on port 5433.", 0.8), hit(q, "Use the VPN for everything.", 0.5)];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe("The staging database is on port 5433.");
    expect(answer.citations).toEqual([0]);
  });

  it("cites a hit that repeats the answer as support instead of treating it as a rival", () => {
    const q = "What port does the staging database use?";
    const repeated = [hit(q, "The staging database uses port 5433.", 0.8), hit(q, "Note: the staging database uses port 5433.", 0.79)];
    const disagreeing = [
      hit(q, "The staging database uses port 5433.", 0.8),
      hit(q, "The staging database used port 5432 until the May migration.", 0.79),
    ];
    const backed = composeAnswer(q, repeated);
    const contested = composeAnswer(q, disagreeing);
    expect(backed.finalAnswer).toBe("The staging database uses port 5433.");
    expect(backed.citations).toEqual([0, 1]);
    expect(contested.citations).toEqual([0]);
    expect(backed.confidence).toBeGreaterThan(contested.confidence);
    expectValid(backed, repeated);
  });

  it("keeps two sentences of one entry in reading order when both are needed", () => {
    const q = "When does the release train leave?";
    const hits = [hit(q, "The release train is our weekly deploy. It leaves every Thursday.", 0.8)];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe("The release train is our weekly deploy. It leaves every Thursday.");
    expect(answer.citations).toEqual([0]);
  });

  it("abstains with no hits, no usable query terms, or evidence that does not touch the query", () => {
    const none = composeAnswer("Which Kubernetes version runs in production?", []);
    expect(none).toEqual({ finalAnswer: ABSTENTION, confidence: 0, citations: [] });

    const stopwordsOnly = [hit("what is it", "It is what it is.", 0.9)];
    expectValid(composeAnswer("what is it?", stopwordsOnly), stopwordsOnly);
    expect(composeAnswer("what is it?", stopwordsOnly).finalAnswer).toBe(ABSTENTION);

    const q = "Which Kubernetes version runs in production?";
    const unrelated = [hit(q, "The cafeteria opens at noon.", 0.4)];
    const answer = composeAnswer(q, unrelated);
    expect(answer.finalAnswer).toBe(ABSTENTION);
    expectValid(answer, unrelated);
  });

  it("abstains when the evidence covers only a small part of the query", () => {
    const q = "Which Kubernetes version runs in the production cluster?";
    const hits = [hit(q, "The cafeteria in production hall B opens at noon.", 0.9), hit(q, "Lunch is free.", 0.1)];
    const answer = composeAnswer(q, hits);
    expect(answer.finalAnswer).toBe(ABSTENTION);
    expect(answer.confidence).toBeGreaterThan(0);
    expectValid(answer, hits);
  });

  it("is more confident for strong, clearly leading evidence than for weak or contested evidence", () => {
    const q = "What port does the staging database use?";
    const strong = composeAnswer(q, [hit(q, "The staging database uses port 5433.", 0.9), hit(q, "Builds run nightly.", 0.2)]);
    const contested = composeAnswer(q, [
      hit(q, "The staging database uses port 5433.", 0.9),
      hit(q, "Ports for production are listed in the wiki.", 0.88),
    ]);
    const partial = composeAnswer(q, [hit(q, "The staging database is hosted in Frankfurt.", 0.9), hit(q, "Builds run nightly.", 0.2)]);
    const weak = composeAnswer(q, [hit(q, "The port authority closes at six.", 0.5), hit(q, "Builds run nightly.", 0.45)]);
    expect(strong.confidence).toBeGreaterThan(contested.confidence);
    expect(contested.confidence).toBeGreaterThan(partial.confidence);
    expect(partial.confidence).toBeGreaterThan(weak.confidence);
    expect(strong.confidence).toBeGreaterThan(0.8);
    expect(weak.finalAnswer).toBe(ABSTENTION);
  });

  it("does not depend on the scale of the scores, only on their ratios", () => {
    const q = "What port does the staging database use?";
    const contents = ["The staging database uses port 5433.", "The staging database is hosted in Frankfurt.", "Builds run nightly."];
    const hits = contents.map((c, i) => hit(q, c, [0.9, 0.6, 0.1][i] ?? 0));
    const rescaled = hits.map((h) => ({ ...h, score: h.score / 30 }));
    expect(composeAnswer(q, rescaled)).toEqual(composeAnswer(q, hits));
  });

  it("keeps citations valid for every answer it gives", () => {
    const q = "Where are the staging database backups stored and how often do they run?";
    const hits = [
      hit(q, "Staging database backups are stored in the cold bucket.", 0.7),
      hit(q, "Backups run every six hours.", 0.65),
      hit(q, "The staging database is on port 5433.", 0.6),
      hit(q, "", 0.5),
      hit(q, "Unrelated note.", 0),
    ];
    const answer = composeAnswer(q, hits);
    expectValid(answer, hits);
    expect(answer.citations[0]).toBe(0);
  });
});
