// Whether a text reports an error: the vocabulary lesson extraction reads failures by, and retrieval reads a question's
// failure lines by (a failure line is compared by its signature; a task is not).

import { terms } from "./text.js";

// Plain case-insensitive patterns: they run on every sentence of every item, and the unicode flag makes these
// alternations several times slower while nothing in them needs it.

/** Error vocabulary: words, error codes (ECONNREFUSED, npm's ERR!) and HTTP 4xx/5xx statuses in context. */
const ERROR_WORDS =
  /\b(?:errors?|errored|erroring|err|fail(?:s|ed|ing|ures?)?|exceptions?|timed?[ -]?out|timeouts?|refused|denied|forbidden|unauthori[sz]ed|crash(?:ed|es|ing)?|panic(?:ked|s)?|broken|unable to|could ?n[o'’]t|cannot|can[o'’]?t|not found|rejected|invalid|traceback|segfault|segmentation fault|out of memory|oom(?:killed)?|deadlock(?:ed|s)?|abort(?:ed|s)?|outage|corrupt(?:ed|ion)?|e(?:conn[a-z]+|timedout|noent|acces|perm|addrinuse|pipe|notfound|hostunreach|netunreach|mfile))\b/i;
const HTTP_ERROR =
  /\b(?:http|status|code|returned|got|error|response|with)\s*:?\s*[45]\d\d\b|\b[45]\d\d\s+(?:error|bad request|unauthori[sz]ed|forbidden|not found|conflict|too many requests|internal server error|bad gateway|service unavailable|gateway time-?out)\b/i;
/** "no errors", "without failures": error words that report their absence. */
const ABSENT_ERROR = /\b(?:no|without|zero|0)\s+(?:errors?|failures?|exceptions?|crash(?:es)?|timeouts?)\b|\berror[- ]free\b/gi;

/** Reports an error that happened: error vocabulary that does not report its absence ("no errors"). */
export function hasHardError(text: string): boolean {
  if (!ERROR_WORDS.test(text) && !HTTP_ERROR.test(text)) return false;
  const present = text.replace(ABSENT_ERROR, " ");
  return ERROR_WORDS.test(present) || HTTP_ERROR.test(present);
}

/**
 * Words that say that something failed, not what failed: every failure line holds some of them, so in a failure
 * signature they tell nothing apart ("error", "failed", "cannot", "not"). What failed and how stays: "refused",
 * "denied", "timeout", "not found"'s "found".
 */
const MARKER_WORDS = ["error", "errors", "err", "fail", "failed", "failing", "failure", "failures", "exception", "exceptions", "fatal", "not", "no", "cannot", "can", "could", "couldn", "unable", "t"];

/** The index terms of the words in MARKER_WORDS. */
export const ERROR_MARKER_TERMS: ReadonlySet<string> = new Set(MARKER_WORDS.flatMap((word) => terms(word)));
