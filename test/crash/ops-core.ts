// Workload steps on the core data plane: node inserts (one and batched), node and run deletes, scratchpad writes
// and clears, and transactional sessions whose staged inserts and scratchpad writes must all land at commit or none.
import { call, read, readOptional, violation, type Ctx } from "./context.js";
import { CoreRun, Scratchpad, type ClientWorld, type CoreSessionModel, type NodeModel, type PadEntryModel } from "./model.js";
import { coreNodes, pad as padRows, type NodeRow, type Observation, type PadRow } from "./observe.js";

/** A core run is deleted and replaced above this many nodes: a search (at most 100 results) must see all of them. */
export const CORE_RUN_CAPACITY = 40;
/** A scratchpad is cleared above this many entries. */
export const PAD_CAPACITY = 40;
const PAD_KEYS = ["plan", "cursor", "note"];

export const CORE_RPC = {
  insert: "engram.v2.CoreService/InsertNode",
  batch: "engram.v2.CoreService/BatchInsertNodes",
  get: "engram.v2.CoreService/GetNode",
  delete: "engram.v2.CoreService/DeleteNode",
  deleteRun: "engram.v2.CoreService/DeleteRunNodes",
  writePad: "engram.v2.CoreService/WriteScratchpad",
  clearPad: "engram.v2.CoreService/ClearScratchpad",
  createSession: "engram.v2.CoreService/CreateCoreSession",
  commit: "engram.v2.CoreService/CommitCoreSession",
  compact: "engram.v2.CoreService/TriggerCompaction",
} as const;

function newNode(ctx: Ctx, run: CoreRun, fate: NodeModel["fate"]): NodeModel {
  const marker = ctx.world.marker();
  const node: NodeModel = { marker, text: `Crash probe node ${marker} of ${run.id}.`, id: undefined, fate };
  run.nodes.set(marker, node);
  return node;
}

function nodeInput(run: CoreRun, node: NodeModel): { run_id: string; text: string; metadata_json: string } {
  return { run_id: run.id, text: node.text, metadata_json: JSON.stringify({ m: node.marker }) };
}

/** Settles nodes written by one unanswered request, from the run's nodes as search returns them. */
function resolveNodes(route: string, run: CoreRun, nodes: readonly NodeModel[]): (obs: Observation, ctx: Ctx) => void {
  return (obs, ctx) => {
    const seen = obs.nodes.get(run.id) ?? [];
    const counts = nodes.map((n) => seen.filter((row) => row.text === n.text).length);
    if (counts.some((c) => c > 1)) violation(ctx, `${route} (unanswered) stored a node more than once: ${JSON.stringify(counts)}`);
    if (counts.some((c) => (c > 0) !== ((counts[0] ?? 0) > 0))) violation(ctx, `${route} (unanswered) was applied in part: ${JSON.stringify(counts)}`);
    nodes.forEach((n, i) => {
      n.fate = (counts[i] ?? 0) > 0 ? "present" : "absent";
      n.id = seen.find((row) => row.text === n.text)?.id;
    });
  };
}

export async function insertNode(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const run = client.coreRun;
  const node = newNode(ctx, run, "maybe");
  const answer = await call(ctx, "core insert", CORE_RPC.insert, nodeInput(run, node));
  if (answer.kind === "unknown") {
    ctx.pending.push({ route: "core insert", resolve: resolveNodes("core insert", run, [node]) });
    return false;
  }
  node.fate = answer.kind === "acked" ? "present" : "absent";
  if (answer.kind === "acked") node.id = String(answer.body["node_id"]);
  return true;
}

export async function batchInsertNodes(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const run = client.coreRun;
  const nodes = Array.from({ length: ctx.rng.between(2, 4) }, () => newNode(ctx, run, "maybe"));
  const answer = await call(ctx, "core batch_insert", CORE_RPC.batch, { nodes: nodes.map((n) => nodeInput(run, n)) });
  if (answer.kind === "unknown") {
    ctx.pending.push({ route: "core batch_insert", resolve: resolveNodes("core batch_insert", run, nodes) });
    return false;
  }
  const ids = answer.kind === "acked" ? (answer.body["node_ids"] as unknown[]).map(String) : [];
  nodes.forEach((n, i) => {
    n.fate = answer.kind === "acked" ? "present" : "absent";
    n.id = ids[i];
  });
  return true;
}

export async function deleteNode(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const present = client.coreRun.present();
  if (present.length === 0) return insertNode(ctx, client);
  const node = ctx.rng.pick(present);
  const answer = await call(ctx, "core delete", CORE_RPC.delete, { id: node.id ?? "0" });
  if (answer.kind === "acked") node.fate = "absent";
  if (answer.kind === "unknown") {
    node.fate = "maybe";
    ctx.pending.push({ route: "core delete", resolve: resolveNodes("core delete", client.coreRun, [node]) });
    return false;
  }
  return true;
}

/** Deletes the core run's nodes and moves on to a fresh run; unanswered, all of them must be gone or none. */
export async function deleteCoreRun(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const run = client.coreRun;
  client.generation++;
  client.coreRun = new CoreRun(run.id.replace(/-g\d+$/, `-g${client.generation}`));
  const answer = await call(ctx, "core delete run", CORE_RPC.deleteRun, { run_id: run.id });
  const gone = (): void => {
    run.deleted = true;
    for (const n of run.nodes.values()) n.fate = "absent";
    ctx.world.deletedCoreRuns.push(run);
  };
  if (answer.kind === "acked") gone();
  if (answer.kind === "refused") client.coreRun = run;
  if (answer.kind !== "unknown") return true;
  ctx.pending.push({
    route: "core delete run",
    async before(c) {
      // The old run is no longer observed with the live ones: read it here, before the retry.
      const seen = await read(c, "engram.v2.CoreService/SearchNodes", { query_text: "crash probe node", k: 100, run_id: run.id });
      const left = (seen["results"] as unknown[]).length;
      const expected = run.present().length;
      if (left !== 0 && left !== expected) violation(c, `core delete run (unanswered) was applied in part: ${left} of ${expected} nodes remain`);
      const retry = await call(c, "core delete run (retry)", CORE_RPC.deleteRun, { run_id: run.id }, { transport: "rest" });
      if (retry.kind === "acked") gone();
    },
  });
  return false;
}

function newPadEntry(ctx: Ctx, pad: Scratchpad, key: string, fate: PadEntryModel["fate"]): PadEntryModel {
  const entry: PadEntryModel = { marker: ctx.world.marker(), key, fate };
  pad.entries.set(entry.marker, entry);
  return entry;
}

function padContent(entry: PadEntryModel): string {
  return `Crash probe pad ${entry.marker}.`;
}

export async function writePad(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const pad = client.pad;
  const key = ctx.rng.chance(0.3) ? ctx.rng.pick(PAD_KEYS) : "";
  const replaced = key === "" ? [] : [...pad.entries.values()].filter((e) => e.key === key && e.fate === "present");
  const entry = newPadEntry(ctx, pad, key, "maybe");
  const answer = await call(ctx, "scratchpad write", CORE_RPC.writePad, { session_id: pad.id, key, content: padContent(entry), agent_id: "crash" });
  if (answer.kind === "acked") {
    entry.fate = "present";
    for (const e of replaced) e.fate = "absent";
  } else if (answer.kind === "refused") {
    entry.fate = "absent";
  } else {
    for (const e of replaced) e.fate = "maybe";
    ctx.pending.push({
      route: "scratchpad write",
      resolve(obs, c) {
        const rows = obs.pads.get(pad.id) ?? [];
        const count = (m: string): number => rows.filter((r) => r.content.includes(m)).length;
        const n = count(entry.marker);
        if (n > 1) violation(c, `scratchpad write (unanswered) stored ${n} times`);
        const oldLeft = replaced.filter((e) => count(e.marker) > 0).length;
        if (replaced.length > 0 && n > 0 && oldLeft > 0) violation(c, `scratchpad write with key ${key} (unanswered) stored without replacing the earlier entry`);
        if (replaced.length > 0 && n === 0 && oldLeft === 0) violation(c, `scratchpad write with key ${key} (unanswered) removed the earlier entry without storing`);
        entry.fate = n > 0 ? "present" : "absent";
        for (const e of replaced) e.fate = n > 0 ? "absent" : "present";
      },
    });
    return false;
  }
  return true;
}

/** Clears the scratchpad; unanswered, every entry must be gone or none. */
export async function clearPad(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const pad = client.pad;
  const answer = await call(ctx, "scratchpad clear", CORE_RPC.clearPad, { session_id: pad.id });
  // Forgotten once cleared: an entry that comes back is then unexpected, which the check reports.
  if (answer.kind === "acked") pad.entries.clear();
  if (answer.kind !== "unknown") return true;
  const present = [...pad.entries.values()].filter((e) => e.fate === "present");
  for (const e of present) e.fate = "maybe";
  ctx.pending.push({
    route: "scratchpad clear",
    resolve(obs, c) {
      const rows = obs.pads.get(pad.id) ?? [];
      const left = present.filter((e) => rows.some((r) => r.content.includes(e.marker))).length;
      if (left !== 0 && left !== present.length) violation(c, `scratchpad clear (unanswered) was applied in part: ${left} of ${present.length} entries remain`);
      for (const e of present) e.fate = left === 0 ? "absent" : "present";
    },
  });
  return false;
}

/**
 * A transactional session: opened, one to four writes staged (node inserts, the last maybe a scratchpad write),
 * then committed.
 * Killed before the commit, the session survives the restart and is committed then; killed during the commit, all
 * of its writes must be there or none, and the retried commit must find it closed exactly when they are there.
 */
export async function coreSession(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const created = await call(ctx, "core session create", CORE_RPC.createSession, {});
  if (created.kind !== "acked") return created.kind === "refused";
  const session: CoreSessionModel = { id: String(created.body["session_id"]), run: client.coreRun, pad: client.pad, nodes: [], padEntries: [], uncertain: undefined, commitApplied: undefined };
  client.session = session;
  const stages = ctx.rng.between(1, 4);
  for (let i = 0; i < stages; i++) {
    const staged = i === stages - 1 && ctx.rng.chance(0.5) ? newPadEntry(ctx, session.pad, "", "staged") : newNode(ctx, session.run, "staged");
    const answer =
      "text" in staged
        ? await call(ctx, "core session stage", CORE_RPC.insert, { ...nodeInput(session.run, staged), session_id: session.id })
        : await call(ctx, "core session stage", CORE_RPC.writePad, { session_id: session.pad.id, content: padContent(staged), txn_session_id: session.id });
    if (answer.kind === "unknown") {
      session.uncertain = staged;
      ctx.pending.push({ route: "core session stage", after: async (c) => void (await commitSession(c, client, session, false)) });
      return false;
    }
    if (answer.kind === "refused") staged.fate = "absent";
    else if ("text" in staged) {
      staged.id = String(answer.body["node_id"]);
      session.nodes.push(staged);
    } else session.padEntries.push(staged);
  }
  return commitSession(ctx, client, session, true);
}

function stagedWrites(session: CoreSessionModel): (NodeModel | PadEntryModel)[] {
  return [...session.nodes, ...session.padEntries];
}

async function commitSession(ctx: Ctx, client: ClientWorld, session: CoreSessionModel, live: boolean): Promise<boolean> {
  const answer = await call(ctx, live ? "core session commit" : "core session commit (retry)", CORE_RPC.commit, { id: session.id }, live ? {} : { transport: "rest" });
  if (answer.kind === "acked") {
    client.session = undefined;
    for (const w of stagedWrites(session)) w.fate = "present";
    // A staging call that got no answer is settled at once (this is the check, the server is up): the write was
    // staged or not, and committed exactly once if it was.
    const uncertain = session.uncertain;
    if (uncertain !== undefined) {
      const nodes: NodeRow[] = "text" in uncertain ? await coreNodes(ctx, session.run.id) : [];
      const pads: PadRow[] = "text" in uncertain ? [] : await padRows(ctx, session.pad.id);
      const n = "text" in uncertain ? nodes.filter((r) => r.text === uncertain.text).length : pads.filter((r) => r.content.includes(uncertain.marker)).length;
      if (n > 1) violation(ctx, `an unanswered staged write was committed ${n} times`);
      uncertain.fate = n > 0 ? "present" : "absent";
      if ("text" in uncertain && n > 0) uncertain.id = nodes.find((r) => r.text === uncertain.text)?.id;
    }
    return true;
  }
  if (answer.kind === "refused") {
    client.session = undefined;
    for (const w of stagedWrites(session)) w.fate = "absent";
    return true;
  }
  if (!live) throw new Error("a retried commit got no answer from a live server");
  for (const w of stagedWrites(session)) w.fate = "maybe";
  ctx.pending.push({
    route: "core session commit",
    resolve(obs, c) {
      const nodes = obs.nodes.get(session.run.id) ?? [];
      const rows = obs.pads.get(session.pad.id) ?? [];
      const landed = stagedWrites(session).map((w) => ("text" in w ? nodes.some((r) => r.text === w.text) : rows.some((r) => r.content.includes(w.marker))));
      if (landed.some((l) => l !== landed[0])) violation(c, `core session commit (unanswered) was applied in part: ${JSON.stringify(landed)}`);
      const applied = landed[0] === true;
      for (const w of stagedWrites(session)) w.fate = applied ? "present" : "staged";
      session.commitApplied = applied;
    },
    async after(c) {
      // Retried: it must find the session closed when the writes landed, and apply them when they did not.
      const applied = session.commitApplied === true;
      // A session with nothing staged shows no trace of its commit: either answer is then right.
      const closed = applied || stagedWrites(session).length === 0;
      const retry = await call(c, "core session commit (retry)", CORE_RPC.commit, { id: session.id }, { transport: "rest", allowed: closed ? ["not_found"] : [] });
      if (applied && retry.kind === "acked") violation(c, `core session ${session.id} was committed twice`);
      if (!applied && retry.kind === "acked") for (const w of stagedWrites(session)) w.fate = "present";
      client.session = undefined;
    },
  });
  return false;
}

/**
 * Starts a compaction as the admin: the rest of the workload runs on while it copies and swaps the store. Now and
 * then the killer is called in at once, so that the kill lands while the compaction copies or swaps.
 */
export async function compact(ctx: Ctx): Promise<boolean> {
  const wait = ctx.rng.chance(0.5);
  const answer = await call(ctx, "compaction", CORE_RPC.compact, { wait }, { key: ctx.adminKey });
  if (answer.kind === "acked" && !wait && ctx.rng.chance(0.5)) ctx.killNow?.();
  return answer.kind !== "unknown";
}

/** A node read by id: its text, or undefined when it is not found. */
export async function nodeText(ctx: Ctx, id: string): Promise<string | undefined> {
  const body = await readOptional(ctx, CORE_RPC.get, { id });
  return body === undefined ? undefined : String((body["node"] as Record<string, unknown>)["text"]);
}
