// Embeddings from any OpenAI-compatible /v1/embeddings endpoint (OpenAI, vLLM, Ollama, LM Studio, TEI, LiteLLM…),
// with transient failures (network, timeout, 408, 429, 5xx) retried with capped exponential backoff and jitter.
import { setTimeout as sleep } from "node:timers/promises";
import { normalize, type Embedder } from "../embedder.js";
import { chargeProvider } from "../../platform/cost-meter.js";
import { countTokens } from "../context/token-counter.js";

/** OpenAI's own limit is 2,048 inputs a request; many compatible servers accept far fewer. */
const MAX_BATCH = 256;
/** How much of an error response's body goes into the thrown message. */
const BODY_EXCERPT = 300;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_RETRY_MAX_DELAY_MS = 30_000;
/** Statuses worth another attempt: the request may succeed unchanged later. Any other 4xx never will. */
const TRANSIENT_STATUS = (status: number): boolean => status === 408 || status === 429 || status >= 500;

export interface OpenAiEmbedderOptions {
  /** The endpoint ("https://api.openai.com/v1/embeddings") or its base ("https://api.openai.com/v1", "http://host:8000"). */
  readonly url: string;
  readonly model: string;
  /** Sent as a bearer token when given; never logged nor put into errors. */
  readonly apiKey?: string;
  /** Per request, covering connection, response and body. */
  readonly timeoutMs: number;
  /** The model's vector size, checked on every response. Unset: taken from the first response (see `probe`). */
  readonly dimensions?: number;
  /** Inputs per request, 1–256; default 256. */
  readonly batchSize?: number;
  /** Retries of a request after a transient failure (network, timeout, 408, 429, 5xx); default 3, 0 never retries. */
  readonly maxRetries?: number;
  /** First backoff in ms, doubled on each retry, with jitter; default 500. */
  readonly retryBaseMs?: number;
  /** Longest wait before a retry, also for a server's Retry-After; default 30 000 ms. */
  readonly retryMaxDelayMs?: number;
}

/** One failed attempt: whether another may succeed, and how long the server asked us to wait (Retry-After). */
class AttemptError extends Error {
  readonly transient: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(message: string, transient: boolean, retryAfterMs?: number) {
    super(message);
    this.transient = transient;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Retry-After as milliseconds from now: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/u.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Backoff before retry `retry` (1-based): base·2^(retry−1), capped, then "equal jitter" (half fixed, half random). */
export function backoffMs(retry: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** (retry - 1));
  return ceiling / 2 + random() * (ceiling / 2);
}

/** Turns a base URL into the embeddings endpoint; a URL already naming it is kept. */
function endpointOf(url: string): URL {
  const endpoint = new URL(url);
  const base = endpoint.pathname.replace(/\/+$/u, "");
  if (!base.endsWith("/embeddings")) endpoint.pathname = base.endsWith("/v1") ? `${base}/embeddings` : `${base}/v1/embeddings`;
  return endpoint;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class OpenAiEmbedder implements Embedder {
  readonly id: string;
  readonly model: string;
  readonly #endpoint: URL;
  /** The endpoint as errors show it: no credentials, no query string. */
  readonly #where: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #batchSize: number;
  readonly #maxRetries: number;
  readonly #retryBaseMs: number;
  readonly #retryMaxDelayMs: number;
  #dimensions: number | undefined;

  constructor(options: OpenAiEmbedderOptions) {
    if (options.model === "") throw new Error("OpenAiEmbedder needs a model name");
    if (!(options.timeoutMs > 0)) throw new Error("OpenAiEmbedder needs a positive timeoutMs");
    const batchSize = options.batchSize ?? MAX_BATCH;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
      throw new Error(`OpenAiEmbedder batchSize must be an integer from 1 to ${MAX_BATCH}`);
    }
    if (options.dimensions !== undefined && !(Number.isInteger(options.dimensions) && options.dimensions > 0)) {
      throw new Error("OpenAiEmbedder dimensions must be a positive integer");
    }
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new Error("OpenAiEmbedder maxRetries must be a non-negative integer");
    const retryBaseMs = options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS;
    const retryMaxDelayMs = options.retryMaxDelayMs ?? DEFAULT_RETRY_MAX_DELAY_MS;
    if (!(retryBaseMs > 0) || !(retryMaxDelayMs >= 0)) throw new Error("OpenAiEmbedder retryBaseMs must be positive and retryMaxDelayMs not negative");
    this.model = options.model;
    this.id = `openai:${options.model}`;
    this.#endpoint = endpointOf(options.url);
    this.#where = `${this.#endpoint.origin}${this.#endpoint.pathname}`;
    this.#apiKey = options.apiKey === "" ? undefined : options.apiKey;
    this.#timeoutMs = options.timeoutMs;
    this.#batchSize = batchSize;
    this.#maxRetries = maxRetries;
    this.#retryBaseMs = retryBaseMs;
    this.#retryMaxDelayMs = retryMaxDelayMs;
    this.#dimensions = options.dimensions;
  }

  /**
   * The vector size: as configured, else as learnt from the first response, and 0 until then. A server that builds
   * vector indexes should call `probe()` once at start-up so this is known before anything is indexed.
   */
  get dimensions(): number {
    return this.#dimensions ?? 0;
  }

  /** Embeds one short text if the vector size is not known yet (one request), and returns the size. */
  async probe(): Promise<number> {
    if (this.#dimensions === undefined) await this.embed(["dimension probe"]);
    return this.dimensions;
  }

  /** Unit-length vectors in input order. Blank texts get the zero vector without a request (servers reject them). */
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = new Array<Float32Array>(texts.length);
    const pending: number[] = [];
    texts.forEach((text, i) => {
      if (text.trim() === "") out[i] = new Float32Array(this.#dimensions ?? 0);
      else pending.push(i);
    });
    for (let start = 0; start < pending.length; start += this.#batchSize) {
      const positions = pending.slice(start, start + this.#batchSize);
      const vectors = await this.#request(positions.map((i) => texts[i] as string));
      positions.forEach((position, j) => (out[position] = vectors[j] as Float32Array));
    }
    // Blank texts seen before the size was learnt get a zero vector of the right size now.
    const dims = this.dimensions;
    return out.map((v) => (v.length === dims ? v : new Float32Array(dims)));
  }

  async #request(inputs: string[]): Promise<Float32Array[]> {
    return this.#vectors(await this.#post(inputs), inputs.length);
  }

  /**
   * Charges one attempt to the current request's meter: a failed attempt (retried or not) is a call and its time,
   * without tokens; a successful one its `usage.prompt_tokens` (else `total_tokens`), else the inputs counted with
   * o200k_base.
   */
  #charge(started: number, inputs: readonly string[], body: unknown): void {
    const ms = performance.now() - started;
    if (body === undefined) {
      chargeProvider("embeddings", { calls: 1, inputTokens: 0, outputTokens: 0, ms });
      return;
    }
    const usage = isRecord(body) && isRecord(body.usage) ? body.usage : {};
    const reported = [usage.prompt_tokens, usage.total_tokens].find((n) => typeof n === "number" && Number.isFinite(n) && n >= 0) as number | undefined;
    const inputTokens = reported === undefined ? inputs.reduce((sum, text) => sum + countTokens(text), 0) : Math.floor(reported);
    chargeProvider("embeddings", { calls: 1, inputTokens, outputTokens: 0, ms });
  }

  /**
   * POSTs until an attempt succeeds, fails for good (a 4xx other than 408/429, a malformed body) or the retries run
   * out; then throws the last attempt's error, saying how many attempts were made when there was more than one.
   */
  async #post(inputs: string[]): Promise<unknown> {
    for (let retry = 0; ; retry++) {
      const started = performance.now();
      try {
        const body = await this.#attempt(inputs);
        this.#charge(started, inputs, body);
        return body;
      } catch (e: unknown) {
        this.#charge(started, inputs, undefined);
        if (!(e instanceof AttemptError)) throw e;
        if (!e.transient || retry >= this.#maxRetries) {
          throw new Error(retry === 0 ? e.message : `${e.message} (gave up after ${retry + 1} attempts)`);
        }
        const backoff = backoffMs(retry + 1, this.#retryBaseMs, this.#retryMaxDelayMs);
        // A server's Retry-After wins over our own backoff, within the same cap.
        await sleep(Math.min(this.#retryMaxDelayMs, e.retryAfterMs ?? backoff));
      }
    }
  }

  /**
   * One POST; every failure becomes an AttemptError naming the endpoint and model. The original error is not attached
   * as `cause`: a malformed key makes fetch quote the header value, so only a redacted message goes through.
   */
  async #attempt(inputs: string[]): Promise<unknown> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.#endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: this.model, input: inputs, encoding_format: "float" }),
        signal,
      });
      text = await response.text();
    } catch (e: unknown) {
      if (signal.aborted) throw new AttemptError(`${this.#failure()}: timed out after ${this.#timeoutMs} ms`, true);
      const reason = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
      throw new AttemptError(`${this.#failure()}: ${this.#redact(reason)}`, true);
    }
    if (!response.ok) {
      const excerpt = this.#redact(text).slice(0, BODY_EXCERPT).trim();
      throw new AttemptError(
        `${this.#failure()}: HTTP ${response.status}${excerpt === "" ? "" : `: ${excerpt}`}`,
        TRANSIENT_STATUS(response.status),
        retryAfterMs(response.headers.get("retry-after")),
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new AttemptError(`${this.#failure()}: the response is not JSON`, false);
    }
  }

  /** Checks the response's shape and sizes and returns its vectors by their `index`, normalised. */
  #vectors(body: unknown, expected: number): Float32Array[] {
    const invalid = (why: string): never => {
      throw new Error(`${this.#failure()}: invalid response: ${why}`);
    };
    const data = isRecord(body) ? body.data : undefined;
    if (!Array.isArray(data)) return invalid("no data array");
    if (data.length !== expected) return invalid(`${data.length} embeddings for ${expected} inputs`);
    const out: Float32Array[] = new Array<Float32Array>(expected);
    data.forEach((item: unknown, position) => {
      if (!isRecord(item) || !Array.isArray(item.embedding)) return invalid(`item ${position} has no embedding array`);
      const index = item.index === undefined ? position : item.index;
      if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= expected || out[index]) {
        return invalid(`item ${position} has a missing, duplicate or out-of-range index`);
      }
      const embedding: unknown[] = item.embedding;
      this.#checkDimensions(embedding.length);
      const vector = new Float32Array(embedding.length);
      embedding.forEach((x, d) => {
        if (typeof x !== "number" || !Number.isFinite(x)) invalid(`item ${position} holds a non-numeric value`);
        vector[d] = x as number;
      });
      out[index] = normalize(vector);
    });
    return out;
  }

  #checkDimensions(length: number): void {
    if (this.#dimensions === undefined) {
      if (length === 0) throw new Error(`${this.#failure()}: invalid response: an empty embedding`);
      this.#dimensions = length;
    } else if (length !== this.#dimensions) {
      throw new Error(`embedding model ${this.model} returned ${length}-dimensional vectors, expected ${this.#dimensions}`);
    }
  }

  #failure(): string {
    return `embedding request to ${this.#where} (model ${this.model}) failed`;
  }

  /** Servers sometimes echo request headers in their errors: never let the key through. */
  #redact(text: string): string {
    return this.#apiKey === undefined ? text : text.split(this.#apiKey).join("[redacted]");
  }
}
