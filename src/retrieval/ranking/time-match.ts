// The time stage: a question that names a time ("in June", "on October 13, 2023", "last year", "4 years ago") favours
// the entries that happened then. The expressions are resolved by chrono-node against the scope's newest entry (what
// "last year" means to the conversation asked about, not to the server's clock), each to the period its precision
// names: a day, a month, a year. Entries are placed by their occurrence time; a statement about an event is usually
// made a little after it ("we went camping last week"), so a period reaches `lagDays` past its end.
import * as chrono from "chrono-node";
import type { Scored } from "./hit.js";

export interface TimeStage {
  /** Added to the score of a candidate that occurred in a period the question names. */
  readonly weight: number;
  /** Days after a named period that still count as in it. */
  readonly lagDays: number;
}

/** A period a question names, in unix seconds, [start, end). */
export interface Period {
  readonly start: number;
  readonly end: number;
}

const DAY = 86_400;
/** Characters of a question the stage reads: questions are short, and the parser's cost grows with the text. */
const MAX_QUESTION_CHARS = 1_000;
/** A cheap test before the parser: a question without any of these names no time chrono would resolve. */
const TIME_WORD =
  /\b(?:\d{4}|jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|july|august|september|october|november|december|yesterday|today|tomorrow|ago|last|next|monday|tuesday|wednesday|thursday|friday|saturday|sunday|week|weekend|month|year)\b/i;

/** The periods `text` names, resolved against `reference` (unix seconds); none when it names no time. */
export function namedPeriods(text: string, reference: number): Period[] {
  const read = text.slice(0, MAX_QUESTION_CHARS);
  if (!TIME_WORD.test(read)) return [];
  const periods: Period[] = [];
  for (const found of chrono.parse(read, new Date(reference * 1000))) {
    const known = found.start;
    const start = Math.floor(known.date().getTime() / 1000);
    if (found.end) {
      periods.push({ start, end: Math.floor(found.end.date().getTime() / 1000) + DAY });
      continue;
    }
    // The precision the expression gives decides the period; an expression that fixes no calendar field ("at
    // night") names no period.
    if (known.isCertain("day")) periods.push({ start: startOfDay(start), end: startOfDay(start) + DAY });
    else if (known.isCertain("month")) periods.push(monthOf(start));
    else if (known.isCertain("year") || known.isCertain("weekday")) periods.push(known.isCertain("year") ? yearOf(start) : { start: startOfDay(start), end: startOfDay(start) + DAY });
  }
  return periods;
}

const startOfDay = (seconds: number): number => seconds - (seconds % DAY);

function monthOf(seconds: number): Period {
  const date = new Date(seconds * 1000);
  return { start: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 1000, end: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000 };
}

function yearOf(seconds: number): Period {
  const year = new Date(seconds * 1000).getUTCFullYear();
  return { start: Date.UTC(year, 0, 1) / 1000, end: Date.UTC(year + 1, 0, 1) / 1000 };
}

/**
 * Adds the time bonus (in place) to the candidates that occurred in a period the question names, resolved against
 * the newest candidate's occurrence time.
 */
export function rewardTimes(scores: Map<number, Scored>, question: string, occurrence: (seq: number) => number, stage: TimeStage): void {
  if (stage.weight <= 0 || scores.size === 0) return;
  let newest = 0;
  for (const seq of scores.keys()) newest = Math.max(newest, occurrence(seq));
  if (newest <= 0) return;
  const periods = namedPeriods(question, newest);
  if (periods.length === 0) return;
  const lag = stage.lagDays * DAY;
  for (const [seq, scored] of scores) {
    const at = occurrence(seq);
    if (periods.some((p) => at >= p.start && at < p.end + lag)) scores.set(seq, { ...scored, score: scored.score + stage.weight });
  }
}
