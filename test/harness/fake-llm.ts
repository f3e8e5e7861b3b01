// An OpenAI-compatible chat and embeddings endpoint on loopback, answering each request as the test says: what the
// LLM and remote-embedding paths are tested against (no network, no key). It counts what it was asked and what usage
// it reported, so tests can check the figures Engram reports against the provider's own.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeReply {
  readonly status: number;
  readonly body: unknown;
  /** Answer this late (a timeout test). */
  readonly delayMs?: number;
}

/** What the fake served: calls received (failures included) and the tokens its 200 answers reported in `usage`. */
export interface FakeCounters {
  readonly chat: { calls: number; promptTokens: number; completionTokens: number };
  readonly embeddings: { calls: number; promptTokens: number };
}

export interface FakeLlm {
  /** The API base to give as SERVICE_LLM_URL (and SERVICE_EMBEDDINGS_URL). */
  readonly url: string;
  /** Chat request bodies and Authorization headers received, oldest first. */
  readonly prompts: string[];
  readonly authorizations: (string | undefined)[];
  /** How the next chat requests are answered; set by the test. */
  reply: (prompt: string) => FakeReply;
  /** How the next embeddings requests are answered; default: `embeddingsReply`. */
  replyEmbeddings: (inputs: readonly string[]) => FakeReply;
  readonly counters: FakeCounters;
  /** A copy of the counters now, to take differences around one request. */
  snapshot(): FakeCounters;
  close(): Promise<void>;
}

export const FAKE_EMBEDDING_DIMENSIONS = 8;

/** Letter-frequency buckets: deterministic, and texts sharing letters come out close. */
export function toyEmbedding(text: string): number[] {
  const v = new Array<number>(FAKE_EMBEDDING_DIMENSIONS).fill(0);
  for (const ch of text.toLowerCase()) if (ch >= "a" && ch <= "z") v[(ch.charCodeAt(0) - 97) % FAKE_EMBEDDING_DIMENSIONS]! += 1;
  v[0]! += 0.01;
  return v;
}

/** Toy vectors with usage: one prompt token per whitespace-separated word of each input. */
export function embeddingsReply(inputs: readonly string[]): FakeReply {
  const tokens = inputs.reduce((sum, text) => sum + text.split(/\s+/u).filter((w) => w !== "").length, 0);
  return {
    status: 200,
    body: { data: inputs.map((text, index) => ({ index, embedding: toyEmbedding(text) })), usage: { prompt_tokens: tokens, total_tokens: tokens } },
  };
}

function usageOf(body: unknown): Record<string, unknown> {
  const usage = typeof body === "object" && body !== null ? (body as { usage?: unknown }).usage : undefined;
  return typeof usage === "object" && usage !== null ? (usage as Record<string, unknown>) : {};
}

const numberOr0 = (value: unknown): number => (typeof value === "number" ? value : 0);

export async function startFakeLlm(): Promise<FakeLlm> {
  const counters = { chat: { calls: 0, promptTokens: 0, completionTokens: 0 }, embeddings: { calls: 0, promptTokens: 0 } };
  const fake: FakeLlm = {
    url: "",
    prompts: [],
    authorizations: [],
    reply: () => ({ status: 500, body: {} }),
    replyEmbeddings: embeddingsReply,
    counters,
    snapshot: () => ({ chat: { ...counters.chat }, embeddings: { ...counters.embeddings } }),
    close: () => Promise.resolve(),
  };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      let answer: FakeReply;
      if ((req.url ?? "").endsWith("/embeddings")) {
        answer = fake.replyEmbeddings((JSON.parse(body) as { input: string[] }).input);
        counters.embeddings.calls++;
        if (answer.status === 200) counters.embeddings.promptTokens += numberOr0(usageOf(answer.body)["prompt_tokens"]);
      } else {
        fake.prompts.push(body);
        fake.authorizations.push(req.headers.authorization);
        answer = fake.reply(body);
        counters.chat.calls++;
        if (answer.status === 200) {
          counters.chat.promptTokens += numberOr0(usageOf(answer.body)["prompt_tokens"]);
          counters.chat.completionTokens += numberOr0(usageOf(answer.body)["completion_tokens"]);
        }
      }
      const { status, body: out, delayMs } = answer;
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(out));
      }, delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return Object.assign(fake, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

/** A chat completion whose message is `content`, with token usage reported. */
export function completion(content: string): FakeReply {
  return { status: 200, body: { choices: [{ message: { role: "assistant", content } }], usage: { prompt_tokens: 120, completion_tokens: 15 } } };
}
