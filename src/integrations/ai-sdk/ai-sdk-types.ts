// The AI SDK language-model types this integration touches, derived from the one type `ai` exports for middleware.
// Deriving them (rather than importing `@ai-sdk/provider`) keeps `ai` the only package a user must install, and
// the import is type-only: at run time the integration loads nothing from the AI SDK.
import type { LanguageModelMiddleware } from "ai";

export type { LanguageModelMiddleware };

type TransformParams = NonNullable<LanguageModelMiddleware["transformParams"]>;
type WrapGenerate = NonNullable<LanguageModelMiddleware["wrapGenerate"]>;
type WrapStream = NonNullable<LanguageModelMiddleware["wrapStream"]>;

/** What a model call receives (LanguageModelV3CallOptions). */
export type CallOptions = Parameters<TransformParams>[0]["params"];
/** The call's prompt: system, user, assistant and tool messages. */
export type Prompt = CallOptions["prompt"];
export type PromptMessage = Prompt[number];
/** The result of a non-streaming call (LanguageModelV3GenerateResult). */
export type GenerateResult = Awaited<ReturnType<WrapGenerate>>;
/** The result of a streaming call (LanguageModelV3StreamResult). */
export type StreamResult = Awaited<ReturnType<WrapStream>>;
export type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;
/** Provider metadata of a result: provider name → JSON object. */
export type ProviderMetadata = NonNullable<GenerateResult["providerMetadata"]>;
