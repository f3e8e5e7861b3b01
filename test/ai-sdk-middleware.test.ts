// The AI SDK memory middleware against a real Engram server, with the AI SDK's own mock model: context injected
// before a call (within its token budget, after the caller's system message), turns stored after generate and
// stream calls, feedback recorded as an outcome that reinforces what the context held, model calls that survive an
// unreachable Engram, and one user's memory never reaching another user's calls on the same run id.
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngramClient, type EngramClient } from "../src/client/index.js";
import { CONTEXT_HEADER, CONTEXT_HEADER_TOKENS, engramMemory, type EngramMemory, type EngramMemoryOptions, type MemoryStage } from "../src/integrations/ai-sdk/index.js";
import type { CallOptions, GenerateResult, StreamPart, StreamResult } from "../src/integrations/ai-sdk/ai-sdk-types.js";
import { countTokens } from "../src/retrieval/context/token-counter.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

let server: TestServer;
let alice: EngramClient;
let bob: EngramClient;

function clientOf(apiKey: string): EngramClient {
  return createEngramClient({ endpoint: server.baseUrl, apiKey, transport: "http", env: {} });
}

beforeAll(async () => {
  server = await startTestServer();
  alice = clientOf(await createUser(server.baseUrl, server.adminKey, "ai-sdk-alice"));
  bob = clientOf(await createUser(server.baseUrl, server.adminKey, "ai-sdk-bob"));
});

afterAll(async () => {
  await server.close();
});

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const STOP = { unified: "stop", raw: "stop" } as const;

/** A mock model that answers every generate call with `text`. */
function generating(text: string): MockLanguageModelV3 {
  const result: GenerateResult = { content: [{ type: "text", text }], finishReason: STOP, usage: USAGE, warnings: [] };
  return new MockLanguageModelV3({ doGenerate: async () => result });
}

/** A mock model that streams `deltas` as one text part. */
function streaming(deltas: readonly string[]): MockLanguageModelV3 {
  const parts: StreamPart[] = [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...deltas.map((delta): StreamPart => ({ type: "text-delta", id: "t1", delta })),
    { type: "text-end", id: "t1" },
    { type: "finish", finishReason: STOP, usage: USAGE },
  ];
  return new MockLanguageModelV3({ doStream: async (): Promise<StreamResult> => ({ stream: convertArrayToReadableStream(parts) }) });
}

function memoryOf(client: EngramClient, runId: string, options: Partial<EngramMemoryOptions> = {}): EngramMemory {
  return engramMemory({ client, runId, userId: "user-1", agentId: "assistant", ...options });
}

async function ask(memory: EngramMemory, model: MockLanguageModelV3, prompt: string, system?: string) {
  return generateText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt, system, maxRetries: 0 });
}

/** The system messages of the last call the mock model received, in prompt order. */
function systemMessagesOf(calls: readonly CallOptions[]): string[] {
  const call = calls[calls.length - 1];
  expect(call, "the model was called").toBeDefined();
  return (call as CallOptions).prompt.flatMap((m) => (m.role === "system" ? [m.content] : []));
}

/** Engram's memory of the run as its owner lists it: content → entry. */
async function entriesOf(client: EngramClient, runId: string) {
  const { entries } = await client.memory.listActivity({ runId, limit: 100, sort: "asc" });
  return new Map(entries.map((e) => [e.content, e]));
}

function engramMetadata(metadata: unknown): Record<string, unknown> {
  const engram = (metadata as { engram?: Record<string, unknown> } | undefined)?.engram;
  expect(engram, "providerMetadata.engram").toBeDefined();
  return engram as Record<string, unknown>;
}

/** A loopback URL on which nothing listens: a port the OS just handed out and took back. */
async function deadEndpoint(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve, reject) => probe.close((e) => (e ? reject(e) : resolve())));
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}

describe("engramMemory middleware", () => {
  it("records a generate call's turn in the run, and injects nothing while the run is empty", async () => {
    const runId = `chat-${randomUUID()}`;
    const memory = memoryOf(alice, runId);
    const model = generating("Noted: your favourite colour is teal.");

    const result = await ask(memory, model, "My favourite colour is teal.");

    expect(result.text).toBe("Noted: your favourite colour is teal.");
    expect(systemMessagesOf(model.doGenerateCalls)).toEqual([]);
    expect(engramMetadata(result.providerMetadata)["turnId"]).toBe(memory.lastTurnId);
    const entries = await entriesOf(alice, runId);
    const user = entries.get("User: My favourite colour is teal.");
    const reply = entries.get("Assistant: Noted: your favourite colour is teal.");
    expect(user).toMatchObject({ entryType: "fact", source: "human", userId: "user-1", agentId: "assistant" });
    expect(reply).toMatchObject({ entryType: "trace", source: "agent", userId: "user-1", agentId: "assistant" });
    expect(JSON.parse(user?.metadataJson ?? "{}")).toMatchObject({ integration: "ai-sdk", role: "user", turn_id: memory.lastTurnId });
    expect(entries.size).toBe(2);
  });

  it("injects the earlier turn into the next call, after the caller's system message and within the token budget", async () => {
    const runId = `chat-${randomUUID()}`;
    const tokenBudget = 80;
    // Enough related text that the budget, not the run's size, decides what the block holds.
    await alice.memory.batchInsert({
      runId,
      items: Array.from({ length: 12 }, (_, i) => ({
        text: `Shelf ${i} holds box ${i}, whose colour is a dusty grey that was repainted several times over the years.`,
        userId: "user-1",
      })),
    });
    const memory = memoryOf(alice, runId, { tokenBudget });
    await ask(memory, generating("Noted: your favourite colour is teal."), "My favourite colour is teal.");

    const model = generating("Teal.");
    const result = await ask(memory, model, "What is my favourite colour?", "You are terse.");

    const [callerSystem, injected, ...rest] = systemMessagesOf(model.doGenerateCalls);
    expect(callerSystem).toBe("You are terse.");
    expect(rest).toEqual([]);
    expect(injected?.startsWith(`${CONTEXT_HEADER}\n\n`)).toBe(true);
    expect(injected).toContain("User: My favourite colour is teal.");
    expect(countTokens(injected ?? "")).toBeLessThanOrEqual(tokenBudget);
    // The budget left most of the run out.
    expect(injected?.match(/Shelf \d+/g)?.length ?? 0).toBeLessThan(12);
    const contextTokens = engramMetadata(result.providerMetadata)["contextTokens"];
    expect(contextTokens).toBeGreaterThan(0);
    expect(contextTokens).toBeLessThanOrEqual(tokenBudget - CONTEXT_HEADER_TOKENS);
    // The conversation itself comes after every system message, unchanged.
    expect((model.doGenerateCalls[0] as CallOptions).prompt.at(-1)).toEqual({
      role: "user",
      content: [{ type: "text", text: "What is my favourite colour?" }],
    });
  });

  it("keeps the header's share of the budget at least what the header costs", () => {
    expect(countTokens(`${CONTEXT_HEADER}\n\n`)).toBeLessThan(CONTEXT_HEADER_TOKENS);
    expect(() => engramMemory({ client: alice, runId: "r", tokenBudget: CONTEXT_HEADER_TOKENS })).toThrow(/tokenBudget/);
    expect(() => engramMemory({ client: alice, runId: " " })).toThrow(/runId/);
  });

  it("records a streamed turn once the stream has ended", async () => {
    const runId = `chat-${randomUUID()}`;
    const memory = memoryOf(alice, runId);
    const model = streaming(["Teal ", "is a ", "fine kitchen colour."]);

    const result = streamText({ model: wrapLanguageModel({ model, middleware: memory.middleware }), prompt: "I painted my kitchen teal.", maxRetries: 0 });

    expect(await result.text).toBe("Teal is a fine kitchen colour.");
    expect(engramMetadata(await result.providerMetadata)["turnId"]).toBe(memory.lastTurnId);
    const entries = await entriesOf(alice, runId);
    expect(entries.get("User: I painted my kitchen teal.")).toMatchObject({ entryType: "fact", userId: "user-1" });
    expect(entries.get("Assistant: Teal is a fine kitchen colour.")).toMatchObject({ entryType: "trace", userId: "user-1" });
  });

  it("records feedback as an outcome of the run that reinforces the lesson the context held, once per turn", async () => {
    const runId = `chat-${randomUUID()}`;
    const lesson = "When the user asks which colour to paint a room, name one exact shade.";
    // Stored through Reflect at a confidence an outcome can still raise.
    const reflected = await alice.learning.reflect({
      runId,
      lessons: [{ content: lesson, lessonType: "observation", scope: "run" }],
      confidence: 0.6,
      userId: "user-1",
    });
    expect(reflected.decisions[0]?.decision).toBe("accepted");
    const lessonOf = async () => {
      const { lessons } = await alice.learning.listLessons({ runId, limit: 50 });
      const found = lessons.find((l) => l.content === lesson);
      expect(found, "the lesson is listed").toBeDefined();
      return found as NonNullable<typeof found>;
    };
    const before = await lessonOf();
    const memory = memoryOf(alice, runId);
    const model = generating("Paint the hallway sage green.");

    await ask(memory, model, "Which colour should I paint the hallway?");
    expect(systemMessagesOf(model.doGenerateCalls)[0]).toContain(lesson);
    const feedback = await memory.recordFeedback({ outcome: "success", rationale: "the user painted it and liked it" });

    expect(feedback.turnId).toBe(memory.lastTurnId);
    expect(feedback.deduplicated).toBe(false);
    expect(feedback.outcomeId).not.toBe("");
    // The lesson from the context, plus the turn's two entries.
    expect(feedback.entriesReinforced).toBe(3);
    const after = await lessonOf();
    expect(after.reinforcementCount).toBe(before.reinforcementCount + 1);
    expect(after.confidence).toBeGreaterThan(before.confidence);

    const repeat = await memory.recordFeedback({ outcome: "success" });
    expect(repeat).toMatchObject({ outcomeId: feedback.outcomeId, deduplicated: true, entriesReinforced: 0 });
    expect((await lessonOf()).reinforcementCount).toBe(after.reinforcementCount);
  });

  it("lets the model call succeed when Engram is unreachable, and tells onError", async () => {
    const failures: [unknown, MemoryStage][] = [];
    const memory = engramMemory({
      clientOptions: { endpoint: await deadEndpoint(), apiKey: "unused", transport: "http", env: {} },
      runId: `chat-${randomUUID()}`,
      timeoutMs: 2000,
      onError: (error, stage) => {
        failures.push([error, stage]);
        throw new Error("a failing handler must not fail the call either");
      },
    });
    const model = generating("Still here.");

    const result = await ask(memory, model, "Hello?");

    expect(result.text).toBe("Still here.");
    expect(systemMessagesOf(model.doGenerateCalls)).toEqual([]);
    expect(failures.map(([, stage]) => stage)).toEqual(["context", "record"]);
    for (const [error] of failures) expect(ConnectError.from(error).code).toBe(Code.Unavailable);
    // Feedback is asked for explicitly, so its failure is the caller's to handle.
    await expect(memory.recordFeedback({ outcome: "success" })).rejects.toBeInstanceOf(ConnectError);
  });

  it("never injects one user's memory into another user's calls on the same run id", async () => {
    const runId = `chat-${randomUUID()}`;
    const aliceMemory = memoryOf(alice, runId);
    await ask(aliceMemory, generating("Noted."), "My locker code is 4711.");
    const bobMemory = memoryOf(bob, runId);
    const bobModel = generating("I do not know it.");

    await ask(bobMemory, bobModel, "Bob wonders: what is the locker code?");

    expect(systemMessagesOf(bobModel.doGenerateCalls)).toEqual([]);
    const aliceModel = generating("4711.");
    await ask(aliceMemory, aliceModel, "What is my locker code?");
    const [injected] = systemMessagesOf(aliceModel.doGenerateCalls);
    expect(injected).toContain("4711");
    expect(injected).not.toContain("Bob wonders");
    expect([...(await entriesOf(bob, runId)).keys()].sort()).toEqual(["Assistant: I do not know it.", "User: Bob wonders: what is the locker code?"]);
  });
});
