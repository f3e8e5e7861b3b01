// The agent-traces known-item workload (issue 28), shared by bench/known-item.mjs (through the service) and
// bench/tune-retrieval.mjs (in process): distinct messages of real coding-agent runs, split into folds by repository,
// and seeded queries — six consecutive words, a distinctive identifier, an error line of one message.
import fs from "node:fs";
import zlib from "node:zlib";
import { round } from "./api.mjs";
import { rng } from "./corpus.mjs";

export const TOP_K = 10;
/** A piece that more messages hold names none of them: such queries are not asked. */
export const MAX_HOLDERS = 3;
/** The repositories the tokenizer and ranking may be tuned on; the others are looked at only to report. */
export const TUNING_REPOSITORIES = new Set(["astropy", "matplotlib", "mwaskom", "pallets", "psf", "pylint-dev", "pytest-dev"]);
export const KINDS = ["six_words", "identifier", "error_line"];

/** Distinct messages, in file order: { text, repository, fold }. */
export function loadMessages(file) {
  const seen = new Set();
  const messages = [];
  for (const line of zlib.gunzipSync(fs.readFileSync(file)).toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    const { run, text } = JSON.parse(line);
    if (typeof text !== "string" || text.trim() === "" || seen.has(text)) continue;
    seen.add(text);
    const repository = run.split("__")[0];
    messages.push({ text, repository, fold: TUNING_REPOSITORIES.has(repository) ? "tuning" : "held_out" });
  }
  return messages;
}

/** A token a user would search for by itself: it holds an underscore, a dot, a slash, "::" or an inner capital. */
const IDENTIFIER = /^[A-Za-z_][\w.:/-]*$/;
const IDENTIFIER_MARK = /[_./]|::|[a-z][A-Z]/;
const ERROR_LINE = /\b(?:\w*Error|\w*Exception|FAILED|Traceback|error:|AssertionError)\b/;

/** Candidate query texts of one kind from one message (the picker chooses among them). */
function candidates(kind, text) {
  if (kind === "six_words") {
    const tokens = text.split(/\s+/u).filter(Boolean);
    if (tokens.length < 6) return [];
    const out = [];
    for (let i = 0; i + 6 <= tokens.length; i += 3) out.push(tokens.slice(i, i + 6).join(" "));
    return out;
  }
  if (kind === "identifier") {
    const out = new Set();
    for (const raw of text.split(/[\s"'`()[\]{},;=<>]+/u)) {
      const token = raw.replace(/[.:]+$/u, "");
      if (token.length >= 6 && token.length <= 80 && IDENTIFIER.test(token) && IDENTIFIER_MARK.test(token) && !/^https?:/.test(token)) out.add(token);
    }
    return [...out];
  }
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length >= 12 && line.length <= 200 && ERROR_LINE.test(line));
}

/** Indices of the messages holding `piece` exactly, stopping past MAX_HOLDERS. */
function holders(messages, piece) {
  const out = [];
  for (let i = 0; i < messages.length && out.length <= MAX_HOLDERS; i++) if (messages[i].text.includes(piece)) out.push(i);
  return out;
}

/** Seeded queries: per fold and kind, up to QUERIES distinctive pieces of distinct messages. */
export function pickQueries(messages, perKind) {
  const random = rng(28);
  const queries = [];
  for (const fold of ["tuning", "held_out"]) {
    const pool = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.fold === fold);
    for (const kind of KINDS) {
      const order = pool.map((p) => ({ p, r: random() })).sort((a, b) => a.r - b.r).map(({ p }) => p);
      let picked = 0;
      for (const { m, i } of order) {
        if (picked >= perKind) break;
        const options = candidates(kind, m.text);
        if (options.length === 0) continue;
        const text = options[Math.floor(random() * options.length)];
        const holding = holders(messages, text);
        if (!holding.includes(i) || holding.length > MAX_HOLDERS) continue;
        queries.push({ fold, kind, text, relevant: new Set(holding) });
        picked++;
      }
    }
  }
  return queries;
}

/** hit@1 and hit@10 per fold and kind, in percent. */
export function score(queries, rankedOf) {
  const table = {};
  for (const fold of ["tuning", "held_out"]) {
    table[fold] = {};
    for (const kind of [...KINDS, "all"]) {
      const subset = queries.filter((q, n) => q.fold === fold && (kind === "all" || q.kind === kind) && rankedOf[n] !== undefined);
      const hitAt = (k) => subset.filter((q) => rankedOf[queries.indexOf(q)].slice(0, k).some((i) => q.relevant.has(i))).length;
      table[fold][kind] = { n: subset.length, top1: round((100 * hitAt(1)) / Math.max(1, subset.length), 1), top10: round((100 * hitAt(TOP_K)) / Math.max(1, subset.length), 1) };
    }
  }
  return table;
}
