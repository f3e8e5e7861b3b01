// Passes a model's stream through unchanged while collecting its text, tagging its `finish` part with Engram's
// metadata, and running a callback once the stream has ended normally (not when it is cancelled or fails).
import type { ProviderMetadata, StreamPart } from "./ai-sdk-types.js";

export function tapStream(
  stream: ReadableStream<StreamPart>,
  metadata: ProviderMetadata,
  onEnd: (text: string) => Promise<void>,
): ReadableStream<StreamPart> {
  let text = "";
  return stream.pipeThrough(
    new TransformStream<StreamPart, StreamPart>({
      transform(part, controller) {
        if (part.type === "text-delta") text += part.delta;
        controller.enqueue(part.type === "finish" ? { ...part, providerMetadata: { ...part.providerMetadata, ...metadata } } : part);
      },
      // The stream closes once the turn is stored, as a generate call returns once it is: the next call sees it.
      flush: () => onEnd(text.trim()),
    }),
  );
}
