// The check after every restart: settles the requests that got no answer (retrying the idempotent ones), then
// compares what the server holds with the model — every acknowledged write present exactly once and whole, every
// acknowledged delete still deleted, idempotent outcomes applied once, at most one active version per prompt and
// skill — and asks the indexes: a query finds a stored entry by its marker and returns nothing deleted or stale.
import type { JsonObject } from "../harness/callers.js";
import { read, violation, type Ctx } from "./context.js";
import { termFrequencies } from "../../src/retrieval/text.js";
import { markerOf, type EntryModel, type MemoryRun, type OutcomeKeys, type Versioned } from "./model.js";
import { coreNodes, observe, rowsOf, type Observation } from "./observe.js";
import { nodeText } from "./ops-core.js";
import { waitForJobs } from "./ops-memory.js";
import { prepareShared } from "./ops-resources.js";

const QUERY = "engram.v2.MemoryService/Query";
const DEREFERENCE = "engram.v2.MemoryService/Dereference";
const STATS = "engram.v2.CoreService/GetStorageStats";
/** Deleted runs and core runs probed again at each check, newest first. */
const RECENT_DELETED = 3;
/** Nodes read by id at each check, of each fate. */
const NODE_SAMPLE = 5;

export async function check(ctx: Ctx): Promise<void> {
  const todo = ctx.pending.splice(0);
  for (const p of todo) await p.before?.(ctx);
  for (const run of ctx.world.liveRuns()) await waitForJobs(ctx, run, false);
  const obs = await observe(ctx);
  for (const p of todo) p.resolve?.(obs, ctx);
  verifyEntries(ctx, obs);
  verifyLessons(ctx, obs);
  verifyNodes(ctx, obs);
  verifyPads(ctx, obs);
  for (const model of ctx.world.versioned()) verifyVersions(ctx, obs, model);
  await probeIndexes(ctx);
  await verifyStorage(ctx, obs);
  for (const p of todo) await p.after?.(ctx);
  await prepareShared(ctx);
}

/** Polls of the storage statistics while deleted runs are still being purged in the background. */
const MAX_PURGE_POLLS = 1200;

interface StorageCounts {
  readonly keys: ReadonlyMap<string, number>;
  readonly indexes: ReadonlyMap<string, number>;
}

async function storageCounts(ctx: Ctx): Promise<StorageCounts> {
  for (let poll = 0; ; poll++) {
    const body = await read(ctx, STATS, {}, ctx.adminKey);
    const keys = new Map((body["databases"] as JsonObject[]).map((d) => [String(d["name"]), Number(d["key_count"])]));
    const indexes = new Map((body["indexes"] as JsonObject[]).map((d) => [String(d["name"]), Number(d["entry_count"])]));
    if ((keys.get("run_tombstones") ?? 0) === 0) return { keys, indexes };
    if (poll >= MAX_PURGE_POLLS) {
      violation(ctx, `deleted runs are still being purged after ${MAX_PURGE_POLLS} polls`);
      return { keys, indexes };
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Every index agrees with LMDB, counted by the server itself once deleted runs are purged: each entry has its run,
 * owner and owner-run index keys, its vector and its index terms, and is in the in-memory catalog; the in-memory
 * BM25 postings are exactly the terms of the stored contents; each node has its vector and run key; no job is left
 * queued; every outcome key has its outcome.
 */
async function verifyStorage(ctx: Ctx, obs: Observation): Promise<void> {
  const { keys, indexes } = await storageCounts(ctx);
  const entries = keys.get("entries") ?? 0;
  const agree = (what: string, counts: Record<string, number | undefined>): void => {
    const values = new Set(Object.values(counts));
    if (values.size > 1) violation(ctx, `${what} disagree: ${JSON.stringify(counts)}`);
  };
  agree("entry indexes", {
    visible: obs.entries.length,
    entries,
    entries_by_owner: keys.get("entries_by_owner"),
    entries_by_run: keys.get("entries_by_run"),
    entries_by_owner_run: keys.get("entries_by_owner_run"),
    vectors: keys.get("vectors"),
    entry_terms: keys.get("entry_terms"),
    catalog: indexes.get("catalog"),
  });
  let postings = 0;
  for (const row of obs.entries) postings += termFrequencies(row.content).size;
  agree("BM25 postings and stored contents", { postings: indexes.get("sparse"), terms_of_contents: postings });
  agree("references and archive blocks", { references: keys.get("references"), archive_blocks: obs.entries.filter((e) => e.entryType === "archive_block").length });
  const nodes = ctx.world.clients.reduce((n, c) => n + c.coreRun.present().length, 0);
  agree("core node indexes", { acknowledged: nodes, core_nodes: keys.get("core_nodes"), core_node_vectors: keys.get("core_node_vectors"), core_nodes_by_owner_run: keys.get("core_nodes_by_owner_run") });
  agree("unfinished ingest jobs", { queue: keys.get("ingest_job_queue"), queue_by_owner: keys.get("ingest_job_queue_by_owner"), none: 0 });
  agree("ingest job indexes", { jobs: keys.get("ingest_jobs"), jobs_by_run: keys.get("ingest_jobs_by_run") });
  const outcomeKeys = new Set<OutcomeKeys>();
  for (const run of ctx.world.liveRuns()) for (const e of run.entries.values()) if (e.outcomes !== undefined) outcomeKeys.add(e.outcomes);
  const settled = ctx.world.limbo.size === 0 && [...outcomeKeys].every((k) => k.uncertain.size === 0);
  const applied = [...outcomeKeys].reduce((n, k) => n + k.applied.size, 0);
  agree("outcomes and their keys", { outcomes: keys.get("learning_outcomes"), outcome_keys: keys.get("learning_outcome_keys"), ...(settled ? { acknowledged_keys: applied } : {}) });
}

function verifyEntries(ctx: Ctx, obs: Observation): void {
  const byMarker = new Map<string, { entry: EntryModel; run: MemoryRun }>();
  for (const run of [...ctx.world.liveRuns(), ...ctx.world.deletedRuns]) for (const entry of run.entries.values()) byMarker.set(entry.marker, { entry, run });
  const deleted = new Set(ctx.world.deletedRuns.map((r) => r.id));
  const perRun = new Map<string, number>();
  for (const row of obs.entries) {
    perRun.set(row.runId, (perRun.get(row.runId) ?? 0) + 1);
    if (deleted.has(row.runId)) {
      violation(ctx, `entry ${row.id} of deleted run ${row.runId} is visible: ${row.content}`);
      continue;
    }
    if (ctx.world.limbo.has(row.runId) || row.derived) continue;
    const marker = markerOf(row.content);
    const known = marker === undefined ? undefined : byMarker.get(marker);
    if (known === undefined) {
      violation(ctx, `unexpected entry ${row.id} in run ${row.runId}: ${row.content}`);
      continue;
    }
    const { entry, run } = known;
    if (run.id !== row.runId) violation(ctx, `entry ${entry.marker} is in run ${row.runId}, written to ${run.id}`);
    if (entry.fate === "absent") violation(ctx, `entry ${row.id} (${entry.marker}) is visible but was ${entry.type === "lesson" ? "deleted, replaced or never applied" : "never applied"}`);
    else if (row.content !== entry.content) violation(ctx, `entry ${row.id} holds ${JSON.stringify(row.content)}, expected ${JSON.stringify(entry.content)}`);
    if (row.entryType !== entry.type) violation(ctx, `entry ${row.id} has type ${row.entryType}, expected ${entry.type}`);
  }
  for (const run of ctx.world.liveRuns()) {
    for (const entry of run.entries.values()) {
      if (entry.fate !== "present") continue;
      const rows = rowsOf(obs, entry.marker);
      if (rows.length !== 1) {
        violation(ctx, `acknowledged ${entry.type} ${entry.marker} of run ${run.id} is stored ${rows.length} times`);
        if (rows.length === 0) entry.fate = "absent";
        continue;
      }
      const row = rows[0] as (typeof rows)[number];
      if (entry.id !== undefined && entry.id !== row.id) violation(ctx, `${entry.marker} has id ${row.id}, acknowledged as ${entry.id}`);
      entry.id = row.id;
      if (entry.type === "archive_block" && entry.referenceId === undefined && row.referenceId !== "") entry.referenceId = row.referenceId;
    }
    // The run's own index (ListActivity by run) must count what the owner's index (across runs) lists.
    const total = obs.runTotals.get(run.id) ?? 0;
    if (total !== (perRun.get(run.id) ?? 0)) violation(ctx, `run ${run.id}: ListActivity by run counts ${total} entries, across runs ${perRun.get(run.id) ?? 0}`);
  }
}

function verifyLessons(ctx: Ctx, obs: Observation): void {
  const derived = new Set(obs.entries.filter((e) => e.derived).map((e) => e.id));
  for (const run of ctx.world.liveRuns()) {
    const rows = obs.lessons.get(run.id) ?? new Map();
    const expected = run.lessons();
    for (const lesson of expected) {
      const row = rows.get(lesson.id ?? "");
      if (row === undefined) {
        violation(ctx, `lesson ${lesson.id} (${lesson.marker}) of run ${run.id} is missing from ListLessons`);
        continue;
      }
      if (row.content !== lesson.content) violation(ctx, `lesson ${lesson.id} lists ${JSON.stringify(row.content)}, expected ${JSON.stringify(lesson.content)}`);
      const keys = lesson.outcomes;
      if (keys !== undefined && keys.uncertain.size === 0 && row.reinforcementCount !== keys.applied.size) {
        violation(ctx, `lesson ${lesson.id}: reinforcement count ${row.reinforcementCount}, but ${keys.applied.size} distinct outcome keys were applied`);
      }
    }
    const ids = new Set(expected.map((l) => l.id));
    for (const id of rows.keys()) {
      if (!ids.has(id) && !derived.has(id) && !ctx.world.limbo.has(run.id)) {
        const maybe = [...run.entries.values()].some((e) => e.id === id && e.fate === "maybe");
        if (!maybe) violation(ctx, `ListLessons of run ${run.id} returns lesson ${id}, which is deleted or was never acknowledged`);
      }
    }
  }
}

function verifyNodes(ctx: Ctx, obs: Observation): void {
  for (const client of ctx.world.clients) {
    const run = client.coreRun;
    const rows = obs.nodes.get(run.id) ?? [];
    const seen = new Map<string, number>();
    for (const row of rows) {
      const marker = markerOf(row.text);
      const node = marker === undefined ? undefined : run.nodes.get(marker);
      if (node === undefined || marker === undefined) {
        violation(ctx, `core search of run ${run.id} returns unexpected node ${row.id}: ${row.text}`);
        continue;
      }
      seen.set(marker, (seen.get(marker) ?? 0) + 1);
      if (node.fate === "absent") violation(ctx, `core node ${row.id} (${marker}) is found but was deleted or never applied`);
      if (node.fate === "staged") violation(ctx, `core node ${row.id} (${marker}) is found outside its uncommitted session`);
      if (node.id !== undefined && node.id !== row.id) violation(ctx, `core node ${marker} has id ${row.id}, acknowledged as ${node.id}`);
    }
    for (const node of run.nodes.values()) {
      const n = seen.get(node.marker) ?? 0;
      if (node.fate === "present" && n !== 1) violation(ctx, `acknowledged core node ${node.id} (${node.marker}) is found ${n} times by search`);
      if (node.fate === "present" && n === 1 && node.id === undefined) node.id = rows.find((r) => r.text === node.text)?.id;
    }
  }
}

function verifyPads(ctx: Ctx, obs: Observation): void {
  for (const client of ctx.world.clients) {
    const pad = client.pad;
    const rows = obs.pads.get(pad.id) ?? [];
    const seen = new Map<string, number>();
    for (const row of rows) {
      const marker = markerOf(row.content);
      const entry = marker === undefined ? undefined : pad.entries.get(marker);
      if (entry === undefined || marker === undefined) {
        violation(ctx, `scratchpad ${pad.id} holds unexpected entry ${JSON.stringify(row.content)}`);
        continue;
      }
      seen.set(marker, (seen.get(marker) ?? 0) + 1);
      if (entry.fate === "absent" || entry.fate === "staged") violation(ctx, `scratchpad ${pad.id} holds ${marker}, which is ${entry.fate === "staged" ? "staged in an uncommitted session" : "cleared, replaced or never applied"}`);
      if (row.key !== entry.key) violation(ctx, `scratchpad entry ${marker} has key ${JSON.stringify(row.key)}, written with ${JSON.stringify(entry.key)}`);
    }
    for (const entry of pad.entries.values()) {
      const n = seen.get(entry.marker) ?? 0;
      if (entry.fate === "present" && n !== 1) violation(ctx, `acknowledged scratchpad entry ${entry.marker} of ${pad.id} is stored ${n} times`);
    }
  }
}

function verifyVersions(ctx: Ctx, obs: Observation, model: Versioned): void {
  const rows = obs.versions.get(model) ?? [];
  model.listed = rows.length;
  const active = rows.filter((r) => r.status === "active");
  if (active.length > 1) violation(ctx, `${model.kind} ${model.name} has ${active.length} active versions: ${active.map((r) => r.versionId).join(", ")}`);
  const now = active.length === 1 ? markerOf(active[0]?.content ?? "") : undefined;
  const expected = [...model.active][0];
  if (model.shared) {
    const version = now === undefined ? undefined : model.versions.get(now);
    if (now !== undefined && (version === undefined || version.fate === "absent")) violation(ctx, `${model.kind} ${model.name}: active version carries ${now}, which was never written`);
  } else if (model.active.size === 1 && now !== expected) violation(ctx, `${model.kind} ${model.name}: active version carries ${now ?? "nothing"}, expected ${expected}`);
  if (!model.shared && model.active.size === 0 && active.length > 0) violation(ctx, `${model.kind} ${model.name} has an active version although none was activated`);
  const counts = new Map<string, number>();
  for (const row of rows) {
    if (row.source === "rollback") continue;
    const marker = markerOf(row.content);
    const version = marker === undefined ? undefined : model.versions.get(marker);
    if (version === undefined || marker === undefined) {
      violation(ctx, `${model.kind} ${model.name} lists unexpected version ${row.versionId}`);
      continue;
    }
    counts.set(marker, (counts.get(marker) ?? 0) + 1);
    if (version.fate === "absent") violation(ctx, `${model.kind} ${model.name} lists version ${row.versionId}, whose write was never applied`);
    if (version.fate === "present") version.versionId = row.versionId;
  }
  for (const version of model.versions.values()) {
    const n = counts.get(version.marker) ?? 0;
    if (version.fate === "present" && n !== 1) violation(ctx, `acknowledged ${model.kind} version ${version.marker} of ${model.name} is stored ${n} times`);
  }
}

/**
 * Query evidence: every item a stored entry with its current content — of the run, or a lesson of another run that
 * reaches it while auditioning for a wider scope — and `want` among them when given.
 */
function checkEvidence(ctx: Ctx, run: MemoryRun, body: JsonObject, label: string, want: EntryModel | undefined): void {
  const present = new Map<string, EntryModel>();
  for (const e of run.entries.values()) if (e.fate === "present" && e.id !== undefined) present.set(e.id, e);
  for (const other of ctx.world.liveRuns()) for (const e of other.lessons()) if (e.id !== undefined && !present.has(e.id)) present.set(e.id, e);
  const maybe = new Set([...run.entries.values()].filter((e) => e.fate === "maybe").map((e) => e.id));
  const evidence = (body["evidence"] as JsonObject[] | undefined) ?? [];
  for (const item of evidence) {
    const id = String(item["id"]);
    const entry = present.get(id);
    if (entry === undefined) {
      if (!maybe.has(id)) violation(ctx, `${label} on run ${run.id} returns ${id}, which is not stored (a ghost in an index): ${String(item["content"])}`);
    } else if (item["content"] !== entry.content) {
      violation(ctx, `${label} on run ${run.id} returns ${id} with stale content ${JSON.stringify(item["content"])}`);
    }
  }
  if (want !== undefined && !evidence.some((item) => String(item["id"]) === want.id)) {
    violation(ctx, `${label} for ${want.marker} on run ${run.id} does not find ${want.type} ${want.id} among ${evidence.length} items: ${evidence.map((e) => String(e["id"])).join(", ")}`);
  }
}

async function probeIndexes(ctx: Ctx): Promise<void> {
  for (const run of ctx.world.liveRuns()) {
    const present = [...run.entries.values()].filter((e) => e.fate === "present" && e.id !== undefined);
    const absent = [...run.entries.values()].filter((e) => e.fate === "absent");
    if (present.length > 0) {
      const want = ctx.rng.pick(present);
      // Its unique marker ranks a stored entry first; when it is not even among the first 10, the query is asked
      // again for up to 100 items (more than a run holds) to tell a ranking fault from an index that lost it.
      const body = await read(ctx, QUERY, { run_id: run.id, query: want.marker, limit: 10 });
      const evidence = (body["evidence"] as JsonObject[] | undefined) ?? [];
      if (evidence.some((item) => String(item["id"]) === want.id)) checkEvidence(ctx, run, body, "query", want);
      else {
        const wide = await read(ctx, QUERY, { run_id: run.id, query: want.marker, limit: 100 });
        const at = ((wide["evidence"] as JsonObject[] | undefined) ?? []).findIndex((item) => String(item["id"]) === want.id);
        const top = evidence.slice(0, 3).map((e) => `${String(e["id"])} ${String(e["entry_type"])} ${String(e["retrieval_mode"])} ${String(e["score"])}`);
        violation(ctx, `query for ${want.marker} on run ${run.id} does not rank ${want.type} ${want.id} in its first 10 (at ${at} of up to 100; first: ${top.join("; ")})`);
      }
    }
    // Vector-only retrieval, asked for a marker that should be gone when there is one: it must not come back.
    const probe = absent.length > 0 ? ctx.rng.pick(absent) : present.length > 0 ? ctx.rng.pick(present) : undefined;
    if (probe !== undefined) checkEvidence(ctx, run, await read(ctx, QUERY, { run_id: run.id, query: probe.marker, mode: "direct_bypass", limit: 100 }), "direct_bypass query", undefined);
    for (const entry of present.filter((e) => e.type === "archive_block" && e.referenceId !== undefined).slice(-2)) {
      const deref = await read(ctx, DEREFERENCE, { reference_id: entry.referenceId ?? "", run_id: run.id });
      if (deref["found"] !== true || deref["content"] !== entry.content) violation(ctx, `archive ${entry.referenceId} (${entry.marker}) dereferences to ${JSON.stringify(deref["content"] ?? null)}`);
    }
  }
  for (const run of ctx.world.deletedRuns.slice(-RECENT_DELETED)) {
    const probe = [...run.entries.values()][0];
    if (probe === undefined) continue;
    for (const mode of ["agent_routed", "direct_bypass"]) {
      const body = await read(ctx, QUERY, { run_id: run.id, query: probe.marker, mode, limit: 10 });
      const evidence = (body["evidence"] as JsonObject[] | undefined) ?? [];
      if (evidence.length > 0) violation(ctx, `${mode} query on deleted run ${run.id} returns ${evidence.map((e) => String(e["id"])).join(", ")}`);
    }
    const total = Number((await read(ctx, "engram.v2.MemoryService/ListActivity", { run_id: run.id, limit: 1 }))["total_visible"] ?? 0);
    if (total !== 0) violation(ctx, `deleted run ${run.id} still lists ${total} entries`);
  }
  for (const run of ctx.world.deletedCoreRuns.slice(-RECENT_DELETED)) {
    const left = await coreNodes(ctx, run.id);
    if (left.length > 0) violation(ctx, `core search of deleted run ${run.id} returns ${left.map((n) => n.id).join(", ")}`);
  }
  await probeNodes(ctx);
}

/** Reads some nodes by id: the present ones must hold their text, the deleted ones must be gone. */
async function probeNodes(ctx: Ctx): Promise<void> {
  const runs = [...ctx.world.clients.map((c) => c.coreRun), ...ctx.world.deletedCoreRuns.slice(-RECENT_DELETED)];
  const nodes = runs.flatMap((r) => [...r.nodes.values()]).filter((n) => n.id !== undefined);
  const present = nodes.filter((n) => n.fate === "present");
  const gone = nodes.filter((n) => n.fate === "absent");
  for (const node of [...sample(ctx, present), ...sample(ctx, gone)]) {
    const text = await nodeText(ctx, node.id ?? "0");
    if (node.fate === "present" && text !== node.text) violation(ctx, `core node ${node.id} (${node.marker}) reads ${JSON.stringify(text ?? null)}`);
    if (node.fate === "absent" && text !== undefined) violation(ctx, `deleted core node ${node.id} (${node.marker}) is still readable`);
  }
}

function sample<T>(ctx: Ctx, items: readonly T[]): T[] {
  if (items.length <= NODE_SAMPLE) return [...items];
  return Array.from({ length: NODE_SAMPLE }, () => ctx.rng.pick(items));
}
