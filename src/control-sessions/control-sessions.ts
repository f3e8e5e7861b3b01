// Control sessions: create one on a run, read its phase and window, close it (final checkpoint, optional reflection
// and the phase change in one transaction). Phases and transitions are written out in sessions_service.proto.
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import type { EntryWriter } from "../memory/entry-writer.js";
import type { AlongsideWrites, Reflector } from "../learning/reflection.js";
import { notFound, quoted } from "../platform/errors.js";
import type { Storage } from "../storage/database.js";
import type { EntryStore, WrittenEntry } from "../storage/entry-store.js";
import { CONTROL_SESSION_RECORD_VERSION, type ControlSessionPhase, type ControlSessionRecord } from "./control-session-record.js";
import type { ControlSessionStore, SessionWindow } from "./control-session-store.js";
import { finalCheckpoint } from "./final-checkpoint.js";
import { DEFAULT_TRUST_POLICY, type TrustPolicy } from "../storage/provenance.js";

/** A session as a reader sees it: the record, its current phase and its window of entries. */
export interface ControlSessionView extends SessionWindow {
  readonly record: ControlSessionRecord;
  readonly phase: ControlSessionPhase;
}

export interface CreateInput {
  readonly owner: number;
  /** "" generates a run id. */
  readonly runId: string;
  readonly agentId: string;
  readonly description: string;
  readonly projectId: string;
}

export interface CloseResult {
  readonly session: ControlSessionView;
  readonly reflected: boolean;
  readonly lessonsExtracted: number;
}

const RUN_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

export class ControlSessions {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #store: ControlSessionStore;
  readonly #writer: EntryWriter;
  readonly #reflector: Reflector;
  readonly #events: EventBus;

  readonly #trustPolicy: TrustPolicy;
  /** Told when a run joins a project: the project's retention policy now applies to the run's entries. */
  readonly #projectLinked: (owner: number) => void;

  constructor(deps: {
    storage: Storage;
    entries: EntryStore;
    store: ControlSessionStore;
    writer: EntryWriter;
    reflector: Reflector;
    events: EventBus;
    trustPolicy?: TrustPolicy;
    projectLinked?: (owner: number) => void;
  }) {
    this.#trustPolicy = deps.trustPolicy ?? DEFAULT_TRUST_POLICY;
    this.#projectLinked = deps.projectLinked ?? (() => undefined);
    this.#storage = deps.storage;
    this.#entries = deps.entries;
    this.#store = deps.store;
    this.#writer = deps.writer;
    this.#reflector = deps.reflector;
    this.#events = deps.events;
  }

  /** Opens an `active` session; ALREADY_EXISTS when the run has had one. */
  async create(input: CreateInput): Promise<ControlSessionView> {
    const runId = input.runId === "" ? generatedRunId() : input.runId;
    const now = Date.now();
    const record = await this.#storage.transaction(() => {
      if (this.#store.get(input.owner, runId) !== undefined) {
        throw new ConnectError(`run ${quoted(runId)} already has a control session; a closed one is not reopened — use another run`, Code.AlreadyExists);
      }
      const created: ControlSessionRecord = {
        v: CONTROL_SESSION_RECORD_VERSION,
        owner: input.owner,
        runId,
        agentId: input.agentId,
        description: input.description,
        projectId: input.projectId,
        phase: "active",
        createdAt: now,
        closedAt: 0,
        // Read inside the transaction: entries committed after it have higher seqs.
        startSeq: this.#entries.maxSeq(),
        endSeq: 0,
        finalCheckpointId: "",
      };
      this.#store.putInTransaction(created);
      return created;
    });
    if (record.projectId !== "") this.#projectLinked(record.owner);
    this.#publish("session.created", record, { session_id: runId, agent_id: record.agentId, phase: "active" });
    return this.#view(record);
  }

  /** The owner's session of the run, as a reader sees it; NOT_FOUND when there is none. */
  get(owner: number, runId: string): ControlSessionView {
    const record = this.#store.get(owner, runId);
    if (record === undefined) throw notFound(`control session ${quoted(runId)}`);
    return this.#view(record);
  }

  /**
   * Closes an active session: `closing` from the start (writes are refused), then the final checkpoint, the
   * reflection's lessons when asked and the phase `closed` commit together. On any failure nothing is stored and the
   * session is `active` again.
   */
  async close(owner: number, runId: string, reflect: boolean, signal?: AbortSignal, keyId = ""): Promise<CloseResult> {
    const before = this.#store.get(owner, runId);
    if (before === undefined) throw notFound(`control session ${quoted(runId)}`);
    if (before.phase === "closed") throw conflict(runId, "is already closed");
    if (!this.#store.beginClosing(owner, runId)) throw conflict(runId, "is being closed by another call");
    try {
      const now = Date.now();
      const endSeq = this.#entries.maxSeq();
      const { ingestCount } = this.#store.window({ ...before, phase: "closed", endSeq });
      const [prepared] = await this.#writer.prepare([{ entry: finalCheckpoint(this.#entries, before, ingestCount, now, { keyId, trustPolicy: this.#trustPolicy }) }]);
      if (prepared === undefined) throw new Error("prepare returned no entry");
      const writes: AlongsideWrites<WrittenEntry> = {
        inTransaction: () => {
          const current = this.#store.get(owner, runId);
          // Deleted or closed meanwhile (DeleteRun does not wait for a close): refuse rather than resurrect it.
          if (current?.phase !== "active" || current.createdAt !== before.createdAt) throw conflict(runId, "changed while it was being closed");
          const [written] = this.#entries.writeInTransaction([prepared], now);
          if (written === undefined) throw new Error("write returned no entry");
          this.#store.putInTransaction({ ...current, phase: "closed", closedAt: now, endSeq, finalCheckpointId: written.record.referenceId });
          return written;
        },
        committed: (written) => this.#writer.committed([written], [prepared], "session_close"),
      };
      let lessonsExtracted = 0;
      if (reflect) {
        const reflection = await this.#reflector.reflect({
          owner,
          runId,
          after: undefined,
          stepId: "",
          lastNItems: 0,
          includeStepOutcomes: true,
          userId: "",
          agentId: before.agentId,
          callerLessons: [],
          ...(signal === undefined ? {} : { signal }),
          alongside: writes,
        });
        lessonsExtracted = reflection.decisions.filter((d) => d.decision === "accepted").length;
      } else {
        writes.committed(await this.#storage.transaction(() => writes.inTransaction()));
      }
      const closed = this.#store.get(owner, runId);
      if (closed === undefined) throw notFound(`control session ${quoted(runId)}`);
      const session = this.#viewAs(closed, "closed");
      this.#publish("session.closed", closed, {
        session_id: runId,
        checkpoint_id: closed.finalCheckpointId,
        reflected: reflect,
        lessons_extracted: lessonsExtracted,
        ingest_count: session.ingestCount,
      });
      return { session, reflected: reflect, lessonsExtracted };
    } finally {
      this.#store.endClosing(owner, runId);
    }
  }

  #view(record: ControlSessionRecord): ControlSessionView {
    return this.#viewAs(record, this.#store.phaseOf(record.owner, record.runId) ?? record.phase);
  }

  #viewAs(record: ControlSessionRecord, phase: ControlSessionPhase): ControlSessionView {
    return { record, phase, ...this.#store.window(record) };
  }

  #publish(type: string, record: ControlSessionRecord, payload: Record<string, unknown>): void {
    this.#events.publish({ type, owner: record.owner, runId: record.runId, agentId: record.agentId, payload: JSON.stringify(payload) });
  }
}

function conflict(runId: string, problem: string): ConnectError {
  return new ConnectError(`control session ${quoted(runId)} ${problem}`, Code.Aborted);
}

function generatedRunId(): string {
  const bytes = randomBytes(24);
  let id = "run_";
  for (const byte of bytes) id += RUN_ID_ALPHABET[byte % RUN_ID_ALPHABET.length];
  return id;
}
