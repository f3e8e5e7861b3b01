// What each request field's proto comment says: the values it names in backticks (`fact`, `lesson`, `desc`, …) and
// whether it is required or optional. A generator that follows them gets past enum-like string checks and required
// fields, and reaches the code behind them.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface FieldNote {
  readonly words: readonly string[];
  readonly required: boolean;
  readonly optional: boolean;
}

/** Field key: `engram.v2.RememberRequest.intent` (nested messages joined with "."). */
export type Vocabulary = ReadonlyMap<string, FieldNote>;

const FIELD = /^\s*(?:repeated\s+|optional\s+)?(?:map<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*\d+/;
const MESSAGE = /^\s*message\s+(\w+)\s*\{/;
const PACKAGE = /^\s*package\s+([\w.]+)\s*;/;
// Words that read as values: lowercase identifiers, dotted event types and `prefix.*` patterns; no prose or JSON.
const TOKEN = /^[a-z][a-z0-9_.*-]{0,39}$/;

/** The repository root: the nearest directory above this module that holds proto/engram. */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, "proto", "engram"))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("no proto/engram above the fuzzer");
    dir = parent;
  }
}

function tokensOf(comment: string): string[] {
  return [...comment.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string).filter((t) => TOKEN.test(t));
}

/** Parses one .proto file's comments into `vocabulary`. */
function readProto(text: string, vocabulary: Map<string, FieldNote>): void {
  let pkg = "";
  let comment = "";
  // One entry per open brace: the message name, or "" for services, rpcs and options.
  const scopes: string[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("//")) {
      comment += ` ${trimmed.slice(2)}`;
      continue;
    }
    const pkgMatch = PACKAGE.exec(line);
    if (pkgMatch) pkg = pkgMatch[1] as string;
    const field = FIELD.exec(line);
    const inMessage = scopes.length > 0 && scopes[scopes.length - 1] !== "";
    if (field && inMessage) {
      const note = { words: tokensOf(comment), required: /\bRequired\b/.test(comment), optional: /\b[Oo]ptional\b/.test(comment) };
      vocabulary.set([pkg, ...scopes.filter((s) => s !== ""), field[1]].join("."), note);
    }
    const message = MESSAGE.exec(line);
    let name = message?.[1] ?? "";
    for (const ch of line.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
      if (ch === "{") {
        scopes.push(name);
        name = "";
      } else if (ch === "}") {
        scopes.pop();
      }
    }
    comment = "";
  }
}

let cached: Vocabulary | undefined;

/** The vocabulary of every .proto file under proto/engram, read once. */
export function protoVocabulary(): Vocabulary {
  if (cached !== undefined) return cached;
  const vocabulary = new Map<string, FieldNote>();
  const root = path.join(repoRoot(), "proto", "engram");
  for (const entry of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(".proto")) readProto(fs.readFileSync(path.join(entry.parentPath, entry.name), "utf8"), vocabulary);
  }
  cached = vocabulary;
  return vocabulary;
}
