// Counts tokens as OpenAI's o200k_base models (GPT-4o, GPT-4.1, GPT-5, o-series) see them, so token budgets are real, not estimates.
//
// gpt-tokenizer is pure JavaScript with no dependencies and ships its merge ranks as a JS module inside the
// package: nothing is downloaded or read from disk at run time. Importing the ranks costs ~80 ms once; building
// the encoder (~40 ms) waits for the first count so processes that never count tokens do not pay for it.
import { GptEncoding } from "gpt-tokenizer/GptEncoding";
import o200kBaseRanks from "gpt-tokenizer/bpeRanks/o200k_base";

/** Library and encoding, for docs and telemetry. */
export const TOKENIZER_NAME = "gpt-tokenizer o200k_base";

/** Counts the tokens of a text. `countTokens` is the real one; tests may pass simpler counters. */
export type TokenCounter = (text: string) => number;

// Stored text is data, never control: a special-token string such as `<|endoftext|>` in an entry is counted as
// the ordinary characters it is (the library would otherwise throw on it).
const PLAIN_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };

let encoding: GptEncoding | undefined;

/** Number of o200k_base tokens of `text`. Deterministic; the encoder is built once and kept. */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  encoding ??= GptEncoding.getEncodingApi("o200k_base", () => o200kBaseRanks);
  return encoding.countTokens(text, PLAIN_TEXT);
}
