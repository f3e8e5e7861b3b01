// Engram memory for the Vercel AI SDK (`ai` ≥ 6): `wrapLanguageModel({ model, middleware: engramMemory(…).middleware })`.
export { engramMemory } from "./engram-memory.js";
export type { EngramMemory } from "./engram-memory.js";
export type { EngramMemoryOptions, MemoryClient, MemoryStage } from "./options.js";
export { DEFAULT_TIMEOUT_MS, DEFAULT_TOKEN_BUDGET } from "./options.js";
export type { Feedback, FeedbackOutcome, FeedbackResult } from "./feedback.js";
export { CONTEXT_HEADER, CONTEXT_HEADER_TOKENS } from "./context.js";
export type { InjectedContext } from "./context.js";
