// A small client for any OpenAI-compatible `/v1/chat/completions` endpoint, counted in Engram's LLM metrics.
import type { Logger } from "../../platform/logger.js";
import type { Metrics } from "../../platform/metrics.js";
import { chargeProvider } from "../../platform/cost-meter.js";
import { countTokens } from "../context/token-counter.js";

export interface ChatMessage {
  readonly role: "system" | "user" | "assistant";
  readonly content: string;
}

export interface ChatRequest {
  /** Metrics label saying what the call is for, e.g. `answer`. Keep the set of values small. */
  readonly purpose: string;
  readonly messages: readonly ChatMessage[];
  readonly maxTokens: number;
  readonly temperature: number;
  /** Cancels the call early, e.g. when the RPC that needs it is cancelled. */
  readonly signal?: AbortSignal;
  /** This call's model and time bound, instead of the configured ones (a caller's override). */
  readonly model?: string;
  readonly timeoutMs?: number;
}

export interface ChatCompletion {
  readonly text: string;
  /** Token counts from the response's `usage`; 0 when the provider does not report them. */
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** What callers of a chat model depend on; `ChatClient` is the HTTP implementation. */
export interface ChatCompleter {
  complete(request: ChatRequest): Promise<ChatCompletion>;
}

export type ChatOutcome = "ok" | "error" | "timeout";

/** A failed chat call. The message names the endpoint and the cause and never carries the API key. */
export class ChatError extends Error {
  override readonly name = "ChatError";
  readonly outcome: Exclude<ChatOutcome, "ok">;
  /** HTTP status when the provider answered with a non-2xx status. */
  readonly status: number | undefined;

  constructor(message: string, outcome: Exclude<ChatOutcome, "ok">, status?: number, options?: ErrorOptions) {
    super(message, options);
    this.outcome = outcome;
    this.status = status;
  }
}

export interface ChatClientOptions {
  /**
   * The endpoint, either as the API base (`http://host:port/v1`, to which `/chat/completions` is appended)
   * or as the full completions URL (`http://host:port/v1/chat/completions`, used as is). The base is taken
   * literally: `http://host:port` becomes `http://host:port/chat/completions`, no `/v1` is added.
   * Query parameters (e.g. `?api-version=…`) are kept.
   */
  readonly url: string;
  readonly model: string;
  /** Sent as `Authorization: Bearer <apiKey>`; omitted when absent or empty. */
  readonly apiKey?: string;
  /** Bound on the whole call, from sending the request to reading the full response body. */
  readonly timeoutMs: number;
  readonly metrics: Pick<Metrics, "llmCalls" | "llmTokens" | "llmCallDuration">;
  readonly logger?: Logger;
}

const COMPLETIONS_PATH = "/chat/completions";
/** How much of an error body a message quotes. */
const ERROR_SNIPPET_CHARS = 200;

/** Resolves the configured URL to the completions endpoint; see `ChatClientOptions.url`. */
export function completionsUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error("LLM url is not a valid URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`LLM url must be http or https, not ${parsed.protocol}`);
  }
  const path = parsed.pathname.replace(/\/+$/u, "");
  parsed.pathname = path.endsWith(COMPLETIONS_PATH) ? path : `${path}${COMPLETIONS_PATH}`;
  return parsed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A token count the provider reported, or undefined when it reported none (or nonsense). */
function reportedCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

/** A completion and the tokens it is charged for: as reported, else counted with o200k_base (see README, cost). */
interface ChargedCompletion {
  readonly completion: ChatCompletion;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/** The text of the first choice; content may be a string or, with some providers, an array of text parts. */
function choiceText(body: unknown): string | undefined {
  if (!isRecord(body) || !Array.isArray(body["choices"])) return undefined;
  const choice: unknown = body["choices"][0];
  if (!isRecord(choice) || !isRecord(choice["message"])) return undefined;
  const content = choice["message"]["content"];
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const parts = content.map((part: unknown) => (isRecord(part) && typeof part["text"] === "string" ? part["text"] : ""));
    return parts.join("");
  }
  return undefined;
}

/** A short, single-line description of an error body: the provider's `error.message` when it sends one. */
function errorSnippet(text: string): string {
  let detail = text;
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body)) {
      const error = body["error"];
      if (isRecord(error) && typeof error["message"] === "string") detail = error["message"];
      else if (typeof error === "string") detail = error;
    }
  } catch {
    // Not JSON: quote the raw text.
  }
  const line = detail.replace(/\s+/gu, " ").trim();
  return line.length > ERROR_SNIPPET_CHARS ? `${line.slice(0, ERROR_SNIPPET_CHARS)}…` : line;
}

export class ChatClient implements ChatCompleter {
  readonly #endpoint: URL;
  /** The endpoint as shown in messages and logs: no credentials, no query string. */
  readonly #shownEndpoint: string;
  readonly #model: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #metrics: ChatClientOptions["metrics"];
  readonly #logger: Logger | undefined;

  constructor(options: ChatClientOptions) {
    if (options.model.trim() === "") throw new Error("LLM model must not be empty");
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
      throw new Error("LLM timeoutMs must be a positive number");
    }
    this.#endpoint = completionsUrl(options.url);
    this.#shownEndpoint = `${this.#endpoint.origin}${this.#endpoint.pathname}`;
    this.#model = options.model;
    this.#apiKey = options.apiKey === undefined || options.apiKey === "" ? undefined : options.apiKey;
    this.#timeoutMs = options.timeoutMs;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
  }

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    const { purpose } = request;
    const started = performance.now();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, request.timeoutMs ?? this.#timeoutMs);
    const cancel = (): void => controller.abort();
    if (request.signal?.aborted === true) controller.abort();
    request.signal?.addEventListener("abort", cancel, { once: true });
    try {
      const { completion, inputTokens, outputTokens } = await this.#call(request, controller.signal, () => timedOut);
      const seconds = (performance.now() - started) / 1000;
      this.#record(purpose, "ok", seconds);
      chargeProvider("llm", { calls: 1, inputTokens, outputTokens, ms: seconds * 1000 });
      this.#metrics.llmTokens.inc({ purpose, kind: "prompt" }, completion.promptTokens);
      this.#metrics.llmTokens.inc({ purpose, kind: "completion" }, completion.completionTokens);
      this.#logger?.debug(
        { purpose, durationMs: Math.round(seconds * 1000), promptTokens: completion.promptTokens, completionTokens: completion.completionTokens },
        "llm call completed",
      );
      return completion;
    } catch (e: unknown) {
      const error = this.#asChatError(e, purpose, timedOut);
      const seconds = (performance.now() - started) / 1000;
      this.#record(purpose, error.outcome, seconds);
      // A failed call is still a call that took time; no tokens are charged for it (none were reported).
      chargeProvider("llm", { calls: 1, inputTokens: 0, outputTokens: 0, ms: seconds * 1000 });
      this.#logger?.warn({ purpose, outcome: error.outcome, status: error.status, durationMs: Math.round(seconds * 1000) }, error.message);
      throw error;
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", cancel);
    }
  }

  #record(purpose: string, outcome: ChatOutcome, seconds: number): void {
    this.#metrics.llmCalls.inc({ purpose, outcome });
    this.#metrics.llmCallDuration.observe({ purpose }, seconds);
  }

  async #call(request: ChatRequest, signal: AbortSignal, timedOut: () => boolean): Promise<ChargedCompletion> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (this.#apiKey !== undefined) headers["authorization"] = `Bearer ${this.#apiKey}`;
    const body = JSON.stringify({
      model: request.model ?? this.#model,
      messages: request.messages,
      max_tokens: request.maxTokens,
      temperature: request.temperature,
      stream: false,
    });
    const where = `LLM call (${request.purpose}) to ${this.#shownEndpoint}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.#endpoint, { method: "POST", headers, body, signal });
      // The timeout stays armed while the body is read: a provider that stalls mid-body still times out.
      text = await response.text();
    } catch (e: unknown) {
      if (timedOut()) throw new ChatError(`${where} timed out after ${request.timeoutMs ?? this.#timeoutMs} ms`, "timeout");
      if (signal.aborted) throw new ChatError(`${where} was cancelled`, "error");
      const reason = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
      throw new ChatError(`${where} failed: ${reason}`, "error", undefined, { cause: e });
    }
    if (!response.ok) {
      const snippet = errorSnippet(text);
      throw new ChatError(`${where} failed with HTTP ${response.status}${snippet === "" ? "" : `: ${snippet}`}`, "error", response.status);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ChatError(`${where} returned a body that is not JSON`, "error", response.status);
    }
    const content = choiceText(parsed);
    if (content === undefined) {
      throw new ChatError(`${where} returned no message content in choices[0]`, "error", response.status);
    }
    const usage = isRecord(parsed) && isRecord(parsed["usage"]) ? parsed["usage"] : {};
    const prompt = reportedCount(usage["prompt_tokens"]);
    const completion = reportedCount(usage["completion_tokens"]);
    return {
      completion: { text: content, promptTokens: prompt ?? 0, completionTokens: completion ?? 0 },
      inputTokens: prompt ?? request.messages.reduce((sum, message) => sum + countTokens(message.content), 0),
      outputTokens: completion ?? countTokens(content),
    };
  }

  /** Every error leaves as a ChatError whose message has had the API key scrubbed, whatever produced it. */
  #asChatError(e: unknown, purpose: string, timedOut: boolean): ChatError {
    const error =
      e instanceof ChatError
        ? e
        : new ChatError(`LLM call (${purpose}) failed: ${e instanceof Error ? e.message : String(e)}`, timedOut ? "timeout" : "error");
    const key = this.#apiKey;
    if (key === undefined || !error.message.includes(key)) return error;
    return new ChatError(error.message.split(key).join("[redacted]"), error.outcome, error.status);
  }
}

/**
 * Settles with the call, or rejects as soon as `signal` aborts: a provider (or a test's completer) that ignores the
 * signal cannot hold the caller past its time bound.
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    call.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
