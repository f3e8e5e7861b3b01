// The small text shaping lesson extraction does: folding white space, clipping at a word, clean sentence starts and ends,
// and taking off the labels and subjects agents put before what they did.

/** Labels some agents put before a statement: "Note: never …". */
const STATEMENT_LABEL = /^(?:note|rule|lesson|important|remember|tip|hint|policy|guideline|reminder|nb)\s*[:\-–—]\s*/i;

/** A text without its leading statement label: "Note: never …" → "never …". */
export function stripLabel(text: string): string {
  return text.replace(STATEMENT_LABEL, "");
}

export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Cuts a text to `max` characters at a word boundary, marking the cut with "…". */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,;:.]+$/, "")}…`;
}

/** Drops trailing punctuation and spaces. */
export function stripEnd(text: string): string {
  return text.replace(/[\s.,;:!?\-–—]+$/, "").trim();
}

/** Capitalised and ending in a full stop (or the text's own ! or ?). */
export function asSentence(text: string): string {
  const body = text.trim();
  if (body === "") return "";
  const capital = body.charAt(0).toUpperCase() + body.slice(1);
  return /[.!?…]$/.test(capital) ? capital : `${capital}.`;
}

/** Lowercases an ordinary capitalised first word ("Deploy" → "deploy"), never an acronym or identifier ("ECONNREFUSED"). */
export function lowerFirst(text: string): string {
  const first = /^\S+/.exec(text)?.[0] ?? "";
  return /^\p{Lu}[\p{Ll}'’-]*$/u.test(first) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** Removes a statement label and a leading subject or filler: "Note: we then switched" → "switched". */
export function stripSubject(text: string): string {
  return stripLabel(text)
    .replace(/^(?:(?:so|then|finally|eventually|instead|now|next|and)\s*,?\s+)*/i, "")
    .replace(/^(?:we|i|the agent|agent|they|you)\s+(?:then\s+|finally\s+|just\s+)?/i, "")
    .replace(/^to\s+/i, "")
    .trim();
}

/** A statement without its label, spaces folded and its end trimmed: "Note: never …." → "never …". */
export function statementBody(sentence: string): string {
  return stripEnd(collapse(stripLabel(sentence)));
}
