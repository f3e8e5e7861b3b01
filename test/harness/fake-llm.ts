// An OpenAI-compatible chat endpoint on loopback, answering each request as the test says: what the LLM paths are
// tested against (no network, no key).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeReply {
  readonly status: number;
  readonly body: unknown;
  /** Answer this late (a timeout test). */
  readonly delayMs?: number;
}

export interface FakeLlm {
  /** The API base to give as SERVICE_LLM_URL. */
  readonly url: string;
  /** Request bodies and Authorization headers received, oldest first. */
  readonly prompts: string[];
  readonly authorizations: (string | undefined)[];
  /** How the next requests are answered; set by the test. */
  reply: (prompt: string) => FakeReply;
  close(): Promise<void>;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const fake: FakeLlm = {
    url: "",
    prompts: [],
    authorizations: [],
    reply: () => ({ status: 500, body: {} }),
    close: () => Promise.resolve(),
  };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      fake.prompts.push(body);
      fake.authorizations.push(req.headers.authorization);
      const { status, body: out, delayMs } = fake.reply(body);
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
