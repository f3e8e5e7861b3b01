// Options of the Engram memory middleware, and their defaults.
import { createEngramClient, type EngramClient } from "../../client/engram-client.js";
import type { EngramClientOptions } from "../../client/options.js";
import { CONTEXT_HEADER_TOKENS } from "./context.js";

/** The part of the Engram client the middleware calls. */
export type MemoryClient = Pick<EngramClient, "memory" | "learning">;

/** Where a failure happened: fetching context before the call, recording the turn after it. */
export type MemoryStage = "context" | "record";

export interface EngramMemoryOptions {
  /** The Engram client to use. Default: one made from `clientOptions`. */
  readonly client?: MemoryClient | undefined;
  /** Options of the client made when `client` is absent; by default SERVICE_ENDPOINT and SERVICE_API_KEY are read. */
  readonly clientOptions?: EngramClientOptions | undefined;
  /** The conversation: the Engram run its turns are recorded in and its context is drawn from. Required. */
  readonly runId: string;
  /** Agent that writes the turns and asks for context (a registered agent reads through its lanes and scopes). */
  readonly agentId?: string | undefined;
  /** Logical user the conversation is about: turns are stored about this user and context is limited to them. */
  readonly userId?: string | undefined;
  /** Most tokens (o200k_base) of the injected system message, header included. Default 1500. */
  readonly tokenBudget?: number | undefined;
  /** Entry types the context draws from (`fact`, `lesson`, `rule`, `trace`, …). Default: all. */
  readonly entryTypes?: readonly string[] | undefined;
  /** Whether each call's user message and reply are stored in the run. Default true. */
  readonly recordTurns?: boolean | undefined;
  /** Deadline of each Engram call in milliseconds, so a slow server delays a model call by at most this. Default 5000. */
  readonly timeoutMs?: number | undefined;
  /**
   * Told about every Engram failure of a model call. Such failures never fail the call: it goes on without memory
   * (context) or without being stored (record). Errors thrown here are ignored.
   */
  readonly onError?: ((error: unknown, stage: MemoryStage) => void) | undefined;
}

export interface ResolvedMemoryOptions {
  readonly client: MemoryClient;
  readonly runId: string;
  readonly agentId: string;
  readonly userId: string;
  readonly tokenBudget: number;
  readonly entryTypes: readonly string[];
  readonly recordTurns: boolean;
  readonly timeoutMs: number;
  readonly report: (error: unknown, stage: MemoryStage) => void;
}

export const DEFAULT_TOKEN_BUDGET = 1500;
export const DEFAULT_TIMEOUT_MS = 5000;

/** Validates the options; a mistake here is the caller's and throws at once rather than on every call. */
export function resolveMemoryOptions(options: EngramMemoryOptions): ResolvedMemoryOptions {
  if (options.runId.trim() === "") throw new TypeError("engramMemory: runId is required");
  const tokenBudget = options.tokenBudget ?? DEFAULT_TOKEN_BUDGET;
  // The header takes its share of the budget first; what remains is Engram's to fill.
  if (!Number.isInteger(tokenBudget) || tokenBudget <= CONTEXT_HEADER_TOKENS) {
    throw new TypeError(`engramMemory: tokenBudget must be an integer above ${CONTEXT_HEADER_TOKENS}, got ${tokenBudget}`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(timeoutMs > 0)) throw new TypeError(`engramMemory: timeoutMs must be positive, got ${timeoutMs}`);
  const onError = options.onError;
  return {
    client: options.client ?? createEngramClient(options.clientOptions),
    runId: options.runId,
    agentId: options.agentId ?? "",
    userId: options.userId ?? "",
    tokenBudget,
    entryTypes: options.entryTypes ?? [],
    recordTurns: options.recordTurns ?? true,
    timeoutMs,
    report: (error, stage) => {
      try {
        onError?.(error, stage);
      } catch {
        // A failing error handler must not fail the model call either.
      }
    },
  };
}
