// engramMemory: an AI SDK middleware that gives a model Engram's memory of the conversation. Before each call it
// injects the run's context for the user's latest message; after it, it stores the turn; on feedback, it records
// the outcome so that what helped is trusted more.
import { randomUUID } from "node:crypto";
import type { CallOptions, GenerateResult, LanguageModelMiddleware, ProviderMetadata } from "./ai-sdk-types.js";
import { fetchContext, type InjectedContext } from "./context.js";
import { recordFeedback, type Feedback, type FeedbackResult } from "./feedback.js";
import { resolveMemoryOptions, type EngramMemoryOptions, type ResolvedMemoryOptions } from "./options.js";
import { generatedText, latestUserText, newUserText, withSystemMessage } from "./prompt.js";
import { tapStream } from "./stream-tap.js";
import { recordTurn } from "./turn-recorder.js";
import { TurnLog } from "./turn-log.js";

export interface EngramMemory {
  /** Pass to `wrapLanguageModel({ model, middleware })`. */
  readonly middleware: LanguageModelMiddleware;
  /**
   * Records how a turn went (the latest one unless `turnId` says otherwise) as an outcome of the run, crediting
   * the entries its context held and the turn's own entries. At most once per turn. Unlike the model calls, this
   * rejects when Engram fails, since the caller asked for it.
   */
  recordFeedback(feedback: Feedback): Promise<FeedbackResult>;
  /** Id of the latest finished model call; also in its result as `providerMetadata.engram.turnId`. */
  readonly lastTurnId: string | undefined;
}

/** What transformParams learned about a call, for the wrap step that follows it. */
interface CallState {
  readonly turnId: string;
  readonly userText: string;
  readonly context: InjectedContext | undefined;
}

export function engramMemory(options: EngramMemoryOptions): EngramMemory {
  const resolved = resolveMemoryOptions(options);
  const turns = new TurnLog();
  // Keyed by the params object transformParams returns, which the AI SDK hands to this middleware's wrap step.
  const calls = new WeakMap<CallOptions, CallState>();

  async function contextFor(params: CallOptions): Promise<InjectedContext | undefined> {
    try {
      return await fetchContext(resolved, latestUserText(params.prompt), params.abortSignal);
    } catch (e: unknown) {
      // The caller's own cancellation is not Engram's failure; the model call will report it.
      if (params.abortSignal?.aborted !== true) resolved.report(e, "context");
      return undefined;
    }
  }

  function stateOf(params: CallOptions): CallState {
    return calls.get(params) ?? { turnId: randomUUID(), userText: newUserText(params.prompt), context: undefined };
  }

  /** Logs the finished turn and stores it; resolves (never rejects) once it is stored or the failure reported. */
  function finish(state: CallState, replyText: string, modelId: string): Promise<readonly string[]> {
    const stored = resolved.recordTurns
      ? recordTurn(resolved, { turnId: state.turnId, userText: state.userText, replyText, modelId }).catch((e: unknown) => {
          resolved.report(e, "record");
          return [];
        })
      : Promise.resolve([]);
    turns.add({ turnId: state.turnId, contextIds: state.context?.sourceIds ?? [], stored });
    return stored;
  }

  const middleware: LanguageModelMiddleware = {
    specificationVersion: "v3",

    async transformParams({ params }) {
      const context = await contextFor(params);
      const next: CallOptions = { ...params, prompt: context === undefined ? params.prompt : withSystemMessage(params.prompt, context.message) };
      calls.set(next, { turnId: randomUUID(), userText: newUserText(params.prompt), context });
      return next;
    },

    async wrapGenerate({ doGenerate, params, model }) {
      const state = stateOf(params);
      const result = await doGenerate();
      await finish(state, generatedText(result), model.modelId);
      return { ...result, providerMetadata: { ...result.providerMetadata, ...metadataOf(resolved, state) } } satisfies GenerateResult;
    },

    async wrapStream({ doStream, params, model }) {
      const state = stateOf(params);
      const result = await doStream();
      const stream = tapStream(result.stream, metadataOf(resolved, state), async (text) => {
        await finish(state, text, model.modelId);
      });
      return { ...result, stream };
    },
  };

  return {
    middleware,
    recordFeedback: (feedback) => recordFeedback(resolved, turns, feedback),
    get lastTurnId() {
      return turns.latestTurnId;
    },
  };
}

/** `providerMetadata.engram` of a result: which turn it was, and how much memory it was given. */
function metadataOf(options: ResolvedMemoryOptions, state: CallState): ProviderMetadata {
  return { engram: { turnId: state.turnId, runId: options.runId, contextTokens: state.context?.blockTokens ?? 0 } };
}
