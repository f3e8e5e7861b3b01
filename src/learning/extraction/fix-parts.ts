// Reads what a report of a fix or a success says was done: "Fixed the timeout by raising the limit" → the fix "raising
// the limit" for the symptom "the timeout"; "Raised the timeout. Deploy succeeded." → "Raised the timeout".
import { sentences } from "../../retrieval/text.js";
import { deniesFix, mentionsFix } from "./lesson-text.js";
import { clip, collapse, statementBody, stripEnd, stripSubject } from "./phrasing.js";
import { keyTerms } from "./term-sets.js";
import { verbForm } from "./verb-forms.js";

export interface FixParts {
  /** What was done; "" when the text says only that something was fixed. */
  readonly fix: string;
  /** What it fixed, when the same sentence says it ("The timeout was fixed by …"); else "". */
  readonly symptom: string;
}

const VAGUE_OBJECT = /^(?:it|this|that|them|the (?:issue|problem|error|bug|failure|build|step|run))$/i;
/** Cuts "…, and now it works" off a fix. */
const TRAILING_SUCCESS =
  /\s*[,;]?\s+(?:and|so|which|then|after which)\s+(?:now\s+)?(?:it|this|that|everything|the\s+\S+)\s+(?:now\s+)?(?:works|worked|passed|passes|succeeded|went through|is fine|was fine)\b.*$/i;
const FIX_SHAPES: readonly (readonly [RegExp, (m: RegExpExecArray) => FixParts])[] = [
  // "The timeout was fixed by raising the limit", "Fixed it by …", "Worked around it with …"
  [
    /^(.*?)\b(?:(?:was|were|got|is|are|has been|have been)\s+)?(?:fixed|resolved|solved|worked around|addressed|avoided)\s+(?:(?:it|this|that|them)\s+)?(?:by|with)\s+(.+)$/i,
    (m) => ({ symptom: m[1] ?? "", fix: m[2] ?? "" }),
  ],
  // "We fixed the ECONNREFUSED error by starting the database first"
  [/^(.*?)\b(?:fixed|resolved|solved|avoided|worked around)\s+(.+?)\s+(?:by|with)\s+(.+)$/i, (m) => ({ symptom: m[2] ?? "", fix: m[3] ?? "" })],
  // "The fix was to pin node 20", "Fix: set NODE_OPTIONS", "Workaround: …"
  [/^(?:the\s+)?(?:fix|solution|workaround|resolution|remedy)(?:\s+(?:was|is))?(?:\s*:\s*|\s+(?=to\s))(.+)$/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
  [/^(?:fixed|resolved|solved)\s*:\s*(.+)$/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
  // "After restarting the container, it worked"
  [
    /^after\s+(.+?),?\s+(?:it|that|this|everything|the\s+\S+(?:\s+\S+)?)\s+(?:now\s+)?(?:worked|works|passed|passes|succeeded|went through|ran)\b/i,
    (m) => ({ symptom: "", fix: m[1] ?? "" }),
  ],
  // "Switched to the mirror registry and now it works", "Added a null check; build passes now"
  [
    /^(.+?)\s*(?:,|;|\band\b|—|–|\s-)\s*(?:now\s+)?(?:the\s+)?\S+\s+(?:now\s+)?(?:works|worked|passes|passed|succeeded|is fine|went through)\b/i,
    (m) => ({ symptom: "", fix: m[1] ?? "" }),
  ],
  // "Raising the limit resolved the timeout"
  [/^(.+?)\s+(?:fixed|resolved|solved|cured)\s+(.+)$/i, (m) => ({ symptom: m[2] ?? "", fix: m[1] ?? "" })],
  // "Switching to the mirror registry worked (because …)"
  [/^(.+?)\s+(?:worked|works|did the trick|succeeded|succeeds)\b/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
];

/** Splits a sentence that reports a fix into what was done and, when it says so, what it fixed. */
export function fixParts(sentence: string): FixParts {
  const body = statementBody(sentence);
  for (const [shape, read] of FIX_SHAPES) {
    const match = shape.exec(body);
    if (match === null) continue;
    const parts = read(match);
    const fix = stripSubject(stripEnd(parts.fix.replace(TRAILING_SUCCESS, "").replace(/[\s,;]+(?:which|that|and|so|then|this)$/i, "")));
    // "Deploy succeeded": one word before "worked" names what was done only when it is an action ("Rebooting worked").
    const named = keyTerms(fix).size >= 2 || (keyTerms(fix).size === 1 && verbForm(fix).form === "gerund");
    const symptom = stripEnd(parts.symptom.replace(/\b(?:was|were|got|is|are|has been|have been)$/i, "").replace(/^(?:we|i)\s*$/i, ""));
    return {
      fix: named ? clip(fix, 200) : "",
      symptom: VAGUE_OBJECT.test(symptom) || keyTerms(symptom).size === 0 ? "" : symptom,
    };
  }
  return { fix: "", symptom: "" };
}

/**
 * What a report of success says was done: a fix sentence's action ("Fixed by pinning node 20" → "pinning node 20") or
 * the first sentence that starts with an action ("Raised the timeout to 120s."); "" for "Deploy succeeded." or
 * "Compiled 3 modules.", which report a result and not how it was reached.
 */
export function actionOf(report: string): string {
  for (const sentence of sentences(collapse(report)).slice(0, 6)) {
    if (mentionsFix(sentence)) {
      const { fix } = fixParts(sentence);
      if (fix !== "") return fix;
    } else if (!deniesFix(sentence) && verbForm(sentence).form !== "other") {
      return clip(statementBody(sentence), 200);
    }
  }
  return "";
}
