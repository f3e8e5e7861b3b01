// Bounds how deeply a JSON request nests, checked on the raw bytes before anything recursive (JSON.stringify,
// protobuf JSON decoding) walks it: a body nested thousands deep must be the caller's error, not a stack overflow.
import { invalidArgument } from "../platform/errors.js";

/** The deepest nesting of JSON objects and arrays a request may use, on every transport. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * The nesting depth of a JSON text, or of the valid prefix of a malformed one (the parser reports the rest).
 * Structural characters are ASCII and never occur inside a UTF-8 multi-byte sequence, so bytes can be scanned directly.
 */
export function jsonDepth(bytes: Uint8Array, stopAbove = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return deepest;
}

/** Throws INVALID_ARGUMENT naming `field` when the JSON text nests deeper than MAX_JSON_DEPTH. */
export function assertJsonDepth(field: string, bytes: Uint8Array): void {
  if (jsonDepth(bytes, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw invalidArgument(field, `nests deeper than ${MAX_JSON_DEPTH} levels of JSON objects and arrays`);
  }
}
