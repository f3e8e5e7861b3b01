// The oracle's model of what the server must hold, built from the answers the clients received: each record is
// `present` (its write was acknowledged), `absent` (never written, or its delete was acknowledged), `staged` (in an
// open core session) or `maybe` (its request got no answer; the next check decides, and demands all or nothing).
// Every resource is used by one client at a time, so each has a sequential history with at most one unknown step.

export type Fate = "present" | "absent" | "maybe" | "staged";

/** A memory entry (fact, lesson or archive block), known by the unique marker word in its content. */
export interface EntryModel {
  readonly marker: string;
  readonly content: string;
  readonly type: "fact" | "lesson" | "archive_block";
  id: string | undefined;
  fate: Fate;
  /** Archive blocks: the reference id Dereference takes. */
  referenceId?: string;
  /** Lessons: the idempotency keys of outcomes that credited it (carried over when its content changes). */
  outcomes?: OutcomeKeys;
}

export interface OutcomeKeys {
  /** Keys whose outcome was acknowledged: each raised the reinforcement count by exactly one. */
  readonly applied: Set<string>;
  /** Keys whose outcome got no answer: the count may or may not include them until their retries settle them. */
  readonly uncertain: Set<string>;
}

export interface JobModel {
  readonly jobId: string;
  readonly markers: readonly string[];
}

export class MemoryRun {
  readonly entries = new Map<string, EntryModel>();
  /** Acknowledged ingest jobs not yet seen finished. */
  readonly jobs: JobModel[] = [];
  deleted = false;
  constructor(readonly id: string) {}

  count(fate: Fate): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.fate === fate) n++;
    return n;
  }

  lessons(): EntryModel[] {
    return [...this.entries.values()].filter((e) => e.type === "lesson" && e.fate === "present" && e.id !== undefined);
  }
}

export interface NodeModel {
  readonly marker: string;
  readonly text: string;
  id: string | undefined;
  fate: Fate;
}

export class CoreRun {
  readonly nodes = new Map<string, NodeModel>();
  deleted = false;
  constructor(readonly id: string) {}

  present(): NodeModel[] {
    return [...this.nodes.values()].filter((n) => n.fate === "present");
  }
}

export interface PadEntryModel {
  readonly marker: string;
  readonly key: string;
  fate: Fate;
}

export class Scratchpad {
  readonly entries = new Map<string, PadEntryModel>();
  constructor(readonly id: string) {}
}

/** A prompt (per agent) or a skill: versions known by marker, and which markers the active version may carry. */
export interface VersionModel {
  readonly marker: string;
  versionId: string | undefined;
  fate: Fate;
}

export class Versioned {
  readonly versions = new Map<string, VersionModel>();
  /** Markers the active version may carry: one once known; empty while no version is active. */
  active = new Set<string>();
  /** Skills: undefined until created. Prompts: the agent id. */
  id: string | undefined;
  /** Written by every client at once: which version is active cannot be foreseen, only that one at most is. */
  shared = false;
  /** Versions the last check listed, rollback copies included: one listing shows at most 100. */
  listed = 0;
  constructor(
    readonly kind: "prompt" | "skill",
    readonly name: string,
  ) {}
}

/** An open core session of one client: its staged nodes and scratchpad entries wait for the commit. */
export interface CoreSessionModel {
  readonly id: string;
  readonly run: CoreRun;
  readonly pad: Scratchpad;
  readonly nodes: NodeModel[];
  readonly padEntries: PadEntryModel[];
  /** A staging call that got no answer: its write may be staged or not. */
  uncertain: NodeModel | PadEntryModel | undefined;
  /** An unanswered commit: whether the check found its writes applied, for the retry to expect. */
  commitApplied: boolean | undefined;
}

/**
 * What one client owns: the resources only it writes to. The shared ones (a lesson credited by every client, a
 * prompt and a skill versioned by every client) are written concurrently.
 */
export interface ClientWorld {
  readonly index: number;
  memoryRuns: MemoryRun[];
  coreRun: CoreRun;
  pad: Scratchpad;
  prompt: Versioned;
  skill: Versioned;
  session: CoreSessionModel | undefined;
  /** Generations so far, to name replacements of deleted or full resources. */
  generation: number;
}

export class World {
  readonly clients: ClientWorld[] = [];
  /** Memory runs deleted with an acknowledgement, newest last; their entries must never be seen again. */
  readonly deletedRuns: MemoryRun[] = [];
  readonly deletedCoreRuns: CoreRun[] = [];
  /** Memory runs whose delete_run got no answer, until the retry settles them: their entries are not checked. */
  readonly limbo = new Set<string>();
  /** A run holding one lesson that every client credits with outcomes, concurrently; never deleted. */
  readonly sharedRun = new MemoryRun("mem-shared");
  sharedPrompt = sharedOf("prompt", "agent-shared-g0");
  sharedSkill = sharedOf("skill", "skill_shared_g0");
  #markers = 0;

  constructor(
    clients: number,
    readonly runsPerClient: number,
    readonly projectId: string,
  ) {
    for (let index = 0; index < clients; index++) {
      this.clients.push({
        index,
        memoryRuns: Array.from({ length: runsPerClient }, (_, r) => new MemoryRun(`mem-c${index}-r${r}-g0`)),
        coreRun: new CoreRun(`core-c${index}-g0`),
        pad: new Scratchpad(`pad-c${index}-g0`),
        prompt: promptOf(`agent-c${index}-g0`),
        skill: new Versioned("skill", `skill_c${index}_g0`),
        session: undefined,
        generation: 0,
      });
    }
  }

  /** A word found nowhere else: lowercase letters and digits only, so the tokenizer keeps it whole. */
  marker(): string {
    this.#markers++;
    return `zq${this.#markers.toString(36)}x`;
  }

  liveRuns(): MemoryRun[] {
    return [this.sharedRun, ...this.clients.flatMap((c) => c.memoryRuns)];
  }

  versioned(): Versioned[] {
    return [this.sharedPrompt, this.sharedSkill, ...this.clients.flatMap((c) => [c.prompt, c.skill])];
  }
}

export function sharedOf(kind: Versioned["kind"], name: string): Versioned {
  const model = kind === "prompt" ? promptOf(name) : new Versioned(kind, name);
  model.shared = true;
  return model;
}

function promptOf(agentId: string): Versioned {
  const prompt = new Versioned("prompt", agentId);
  prompt.id = agentId;
  return prompt;
}

/** Finds the marker word in a stored text. */
export function markerOf(text: string): string | undefined {
  return /\bzq[0-9a-z]+x\b/.exec(text)?.[0];
}
