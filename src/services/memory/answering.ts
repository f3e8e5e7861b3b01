// The answerer the memory routes share; it lives with retrieval (src/retrieval/answerer.ts).
export { Answerer, type AnswerOutcome, type LlmFallback } from "../../retrieval/answerer.js";
