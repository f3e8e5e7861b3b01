// Server-sent events framing: one `data:` line of JSON per event, comments as keep-alives.

/** Formats one event. JSON.stringify never emits a raw newline, so one `data:` line holds the whole event. */
export function sseData(json: string): string {
  return `data: ${json}\n\n`;
}

/** A comment line that keeps idle proxies from closing the stream. */
export const SSE_KEEPALIVE = ": keep-alive\n\n";
