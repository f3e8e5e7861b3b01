// Reads and edits an AI SDK prompt: the user's latest words, and where Engram's context goes.
import type { GenerateResult, Prompt, PromptMessage } from "./ai-sdk-types.js";

function textOfParts(parts: readonly { readonly type: string; readonly text?: string }[]): string {
  return parts
    .flatMap((p) => (p.type === "text" && typeof p.text === "string" ? [p.text] : []))
    .join("\n")
    .trim();
}

/** The text of the last user message (its text parts, files left out); "" when there is none. */
export function latestUserText(prompt: Prompt): string {
  for (let i = prompt.length - 1; i >= 0; i--) {
    const message = prompt[i];
    if (message?.role === "user") return textOfParts(message.content);
  }
  return "";
}

/**
 * The user text this call answers for the first time: the last message's text when the prompt ends with the user.
 * A prompt that ends with tool results or an assistant message continues a turn whose user message an earlier call
 * (the tool-call step) already saw, so recording it again would duplicate it.
 */
export function newUserText(prompt: Prompt): string {
  const last = prompt[prompt.length - 1];
  return last?.role === "user" ? textOfParts(last.content) : "";
}

/** The prompt with one more system message, after the caller's leading system messages and before the conversation. */
export function withSystemMessage(prompt: Prompt, content: string): Prompt {
  let at = 0;
  while (prompt[at]?.role === "system") at++;
  const message: PromptMessage = { role: "system", content };
  return [...prompt.slice(0, at), message, ...prompt.slice(at)];
}

/** The text a non-streaming call generated (its text parts, in order); "" when it only called tools. */
export function generatedText(result: GenerateResult): string {
  return result.content
    .flatMap((part) => (part.type === "text" ? [part.text] : []))
    .join("")
    .trim();
}
