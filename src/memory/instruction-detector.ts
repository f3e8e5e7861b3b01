// Recognises text that addresses instructions to an agent — "ignore previous instructions", "note to AI agents",
// "you must always …", a command that pipes a download into a shell — so that such text read from a tool, a document
// or a web page is flagged on ingest (`instruction_like`) and never becomes guidance on its own (see learning/
// reflection.ts and retrieval/context/assemble-context.ts).
//
// Two tiers, because honest text says "always" too:
// - addressed: text that speaks to an AI reader or tries to override its instructions. An agent's own log or a
//   person's note has no reason to say it; flagged whatever the entry's trust (it usually means a page was pasted).
// - imperative: orders and commands ("you must always", "never <verb>", `curl … | sh`, `rm -rf /`, "download
//   https://…"). A person or the agent writing "Always run migrations before deploy" is guidance it was given, so
//   these are flagged only in untrusted text (tool output, documents, web pages), where nobody meant to give orders —
//   and in what the agent logs as a tool's output ("observation: …", "tool: …", "result: …", "stdout: …"): that is
//   text the agent read, relayed under its own name, not guidance it was given.
// Every pattern is linear in the text (no nested quantifiers) and the text read is bounded (see MAX_HEAD_CHARS).
import type { Trust } from "../storage/provenance.js";

/** The ingest flag an instruction-like entry gets. */
export const INSTRUCTION_FLAG = "instruction_like";

/**
 * Characters of an entry the detector reads: its first MAX_HEAD_CHARS and last MAX_TAIL_CHARS (about 4 ms of the
 * event loop on 2 cores). Longer text is read there only; text from an untrusted source is quoted as data whatever
 * the detector finds, so what it misses in the middle of a huge output still never reads as an instruction.
 */
const MAX_HEAD_CHARS = 24_000;
const MAX_TAIL_CHARS = 8_000;

export type InstructionKind =
  | "override"
  | "addressed_to_agent"
  | "concealment"
  | "obligation"
  | "absolute_imperative"
  | "pipe_to_shell"
  | "destructive_command"
  | "fetch_url"
  | "system_prompt";

interface Pattern {
  readonly kind: InstructionKind;
  readonly addressed: boolean;
  readonly pattern: RegExp;
  /**
   * What every match of `pattern` holds, starting at a word boundary, read case-insensitively like it: words no match
   * can do without. Nearly all text holds none of any pattern's, and one search for them all (ANY_NEEDED, which
   * looks only at word starts) then rules every pattern out at once.
   */
  readonly needs: RegExp;
}

const AI_READER = String.raw`(?:ai|a\.i\.|llm|llms|gpt|chatgpt|claude|copilot|language[- ]models?|coding[- ]agents?|autonomous agents?|assistants?|agents?|bots?)`;

const PATTERNS: readonly Pattern[] = [
  {
    kind: "override",
    addressed: true,
    pattern: /\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?(?:your\s+|the\s+|my\s+)?(?:previous|prior|above|earlier|preceding|existing|original|other)\s+(?:instructions?|prompts?|directions?|directives?|rules|guidelines|messages|context)\b/i,
    needs: /ignore|disregard|forget|override/,
  },
  {
    kind: "addressed_to_agent",
    addressed: true,
    pattern: new RegExp(String.raw`\b(?:note|notice|message|instructions?|attention|reminder|warning)\s*(?:to|for)\s+(?:all\s+|any\s+)?(?:ai\s+)?${AI_READER}\b`, "i"),
    needs: /note|notice|message|instruction|attention|reminder|warning/,
  },
  {
    kind: "addressed_to_agent",
    addressed: true,
    pattern: new RegExp(String.raw`\bif\s+you\s+are\s+(?:an?\s+)?(?:ai\b|a\.i\.|llm\b|large language model|language model|ai[- ]assistant|ai[- ]agent|coding agent|automated agent)`, "i"),
    needs: /if\s+you\s+are/,
  },
  {
    kind: "addressed_to_agent",
    addressed: true,
    pattern: /\b(?:ai|llm)\s+(?:agents?|assistants?|models?)\s+(?:reading|processing|parsing|that read|who read)\s+this\b/i,
    needs: /(?:ai|llm)\s+(?:agent|assistant|model)/,
  },
  {
    kind: "concealment",
    addressed: true,
    pattern: /\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to|let)\s+the\s+user\b|\bwithout\s+(?:telling|informing|asking)\s+the\s+user\b/i,
    needs: /the\s+user/,
  },
  {
    kind: "system_prompt",
    addressed: false,
    pattern: /\b(?:your|the)\s+system\s+prompt\b|\bnew\s+system\s+(?:prompt|instructions?)\b/i,
    needs: /system\s+(?:prompt|instruction)/,
  },
  {
    kind: "obligation",
    addressed: false,
    pattern: /\byou\s+(?:must|should|have\s+to|need\s+to|are\s+required\s+to)\s+(?:always|never|first|immediately)\b|\b(?:always|never)\s+forget\s+to\b/i,
    needs: /you\s+(?:must|should|have|need|are)|forget\s+to/,
  },
  // "Always <verb> …" / "Never <verb> …" opening a sentence, a line or a list item: an order, not a description.
  {
    kind: "absolute_imperative",
    addressed: false,
    pattern: /(?:^|[.!?:;]\s+|\n[ \t]*(?:[-*•>]\s*)?)(?:important[:!,]?\s*)?(?:always|never)\s+(?:run|execute|call|use|install|download|fetch|curl|wget|send|post|upload|delete|remove|disable|skip|bypass|ignore|trust|copy|paste|add|set|export|pipe|source|include|grant|give|share|commit|push|verify|check|validate|ask|confirm|report|log|print|reveal|mention)\b/i,
    // "important" may run straight into the order ("IMPORTANTalways run …"): then the order does not start a word.
    needs: /always|never|important(?:always|never)/,
  },
  {
    kind: "pipe_to_shell",
    addressed: false,
    pattern: /\b(?:curl|wget|fetch|iwr|invoke-webrequest|irm)\b[^\n|;]{0,300}\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|da|k|fi)?sh\b|\b(?:curl|wget|iwr|irm)\b[^\n|;]{0,300}\|\s*(?:sudo\s+)?(?:python3?|perl|ruby|node|iex|invoke-expression)\b/i,
    needs: /curl|wget|fetch|iwr|invoke-webrequest|irm/,
  },
  {
    kind: "pipe_to_shell",
    addressed: false,
    pattern: /\b(?:ba|z)?sh\s+<\(\s*(?:curl|wget)\b|\beval\s+"?\$\(\s*(?:curl|wget)\b|\bbase64\s+(?:-d|--decode|-D)\b[^\n;]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|\b(?:echo|printf)\s+\S{24,}\s*\|\s*base64\s+(?:-d|--decode|-D)\b/i,
    needs: /curl|wget|base64/,
  },
  {
    kind: "destructive_command",
    addressed: false,
    pattern: /\brm\s+-(?:rf|fr|r\s+-f|f\s+-r)\s+(?:--no-preserve-root\s+)?(?:\/(?:\s|$|\*)|~\/?(?:\s|$)|\$HOME\b|\*\s|\/\*)|\bchmod\s+\+x\s+\S+\s*&&\s*(?:sudo\s+)?\.\/|\bmkfs(?:\.\w+)?\s+\/dev\/|\bdd\s+if=\S+\s+of=\/dev\/(?:sd|nvme|hd)/i,
    needs: /rm\s+-|chmod|mkfs|dd\s+if=/,
  },
  {
    kind: "fetch_url",
    addressed: false,
    pattern: /(?:^|[.!?:;]\s+|\n[ \t]*(?:[-*•>]\s*)?|\b(?:please|then|first|now|must|should|always)\s+)(?:download|fetch|visit|open|navigate\s+to|go\s+to|send\s+(?:\S+\s+){0,4}to|post\s+(?:\S+\s+){0,4}to|upload\s+(?:\S+\s+){0,4}to|execute|run|install)\s+(?:the\s+\S+\s+(?:at|from)\s+|(?:it\s+)?from\s+)?(?:https?:\/\/|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})/i,
    needs: /https?:\/\/|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d/,
  },
];

/** Text that matches none of this matches no pattern (see Pattern.needs). */
const ANY_NEEDED = new RegExp(String.raw`\b(?:${PATTERNS.map(({ needs }) => needs.source).join("|")})`, "i");

export interface InstructionReading {
  /** Kinds of instruction found, each once, in pattern order. */
  readonly kinds: readonly InstructionKind[];
  /** True when some of it is addressed to an AI reader or overrides its instructions (flagged whatever the trust). */
  readonly addressed: boolean;
}

/** What instruction-like content a text holds. */
export function readInstructions(text: string): InstructionReading {
  const read = text.length > MAX_HEAD_CHARS + MAX_TAIL_CHARS ? `${text.slice(0, MAX_HEAD_CHARS)}\n${text.slice(-MAX_TAIL_CHARS)}` : text;
  const kinds: InstructionKind[] = [];
  let addressed = false;
  if (!ANY_NEEDED.test(read)) return { kinds, addressed };
  for (const { kind, addressed: speaksToAgent, pattern } of PATTERNS) {
    if (kinds.includes(kind) && !(speaksToAgent && !addressed)) continue;
    if (!pattern.test(read)) continue;
    if (!kinds.includes(kind)) kinds.push(kind);
    addressed ||= speaksToAgent;
  }
  return { kinds, addressed };
}

/**
 * Whether an entry with this text and trust is flagged `instruction_like`: any instruction-like content in untrusted
 * text or in a tool's output the agent relays; in other trusted text only content addressed to an AI reader (see the
 * tiers above).
 */
export function isInstructionLike(text: string, trust: Trust): boolean {
  const reading = readInstructions(text);
  return reading.addressed || ((trust === "untrusted" || RELAYED_OUTPUT.test(text)) && reading.kinds.length > 0);
}

/** A trusted writer's label for what a tool returned: the text after it is the tool's, relayed. */
const RELAYED_OUTPUT = /^\s*(?:observation|tool_output|tool[ _]result|tool|result|output|stdout|stderr|response|page|fetched)\s*:/i;

/** The ingest flags of a new entry: `instruction_like` when the detector fires (see isInstructionLike). */
export function ingestFlags(text: string, trust: Trust): string[] {
  return isInstructionLike(text, trust) ? [INSTRUCTION_FLAG] : [];
}
