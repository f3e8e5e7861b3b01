// Reads, through the API, everything the oracle compares with its model: every memory entry of the workload user
// (activity across runs, and each run's own count), each run's lessons, each core run's nodes as vector search
// returns them, the scratchpads, and the prompt and skill versions.
import type { JsonObject } from "../harness/callers.js";
import { read, readOptional, type Ctx } from "./context.js";
import { markerOf, type Versioned } from "./model.js";

export interface ActivityRow {
  readonly id: string;
  readonly runId: string;
  readonly content: string;
  readonly entryType: string;
  readonly derived: boolean;
  readonly referenceId: string;
}

export interface LessonRow {
  readonly id: string;
  readonly content: string;
  readonly reinforcementCount: number;
}

export interface NodeRow {
  readonly id: string;
  readonly text: string;
}

export interface PadRow {
  readonly content: string;
  readonly key: string;
}

export interface VersionRow {
  readonly versionId: string;
  readonly content: string;
  readonly status: string;
  readonly source: string;
}

export interface Observation {
  readonly entries: readonly ActivityRow[];
  readonly byMarker: ReadonlyMap<string, readonly ActivityRow[]>;
  /** ListActivity's `total_visible` for one run (the run index), per live run. */
  readonly runTotals: ReadonlyMap<string, number>;
  readonly lessons: ReadonlyMap<string, ReadonlyMap<string, LessonRow>>;
  readonly nodes: ReadonlyMap<string, readonly NodeRow[]>;
  readonly pads: ReadonlyMap<string, readonly PadRow[]>;
  readonly versions: ReadonlyMap<Versioned, readonly VersionRow[]>;
}

const RPC = {
  activity: "engram.v2.MemoryService/ListActivity",
  lessons: "engram.v2.LearningService/ListLessons",
  search: "engram.v2.CoreService/SearchNodes",
  readPad: "engram.v2.CoreService/ReadScratchpad",
  promptVersions: "engram.v2.ResourcesService/ListPromptVersions",
  skillVersions: "engram.v2.ResourcesService/ListSkillVersions",
} as const;

async function activity(ctx: Ctx): Promise<ActivityRow[]> {
  const rows: ActivityRow[] = [];
  let pageToken = "";
  for (let page = 0; page < 1000; page++) {
    const body = await read(ctx, RPC.activity, { limit: 500, sort: "asc", page_token: pageToken });
    for (const e of body["entries"] as JsonObject[]) {
      rows.push({
        id: String(e["id"]),
        runId: String(e["run_id"]),
        content: String(e["content"]),
        entryType: String(e["entry_type"]),
        derived: e["derived"] === true,
        referenceId: String(e["reference_id"] ?? ""),
      });
    }
    pageToken = String(body["next_page_token"] ?? "");
    if (pageToken === "") return rows;
  }
  throw new Error("activity did not end after 1000 pages");
}

async function lessons(ctx: Ctx, runId: string): Promise<Map<string, LessonRow>> {
  const out = new Map<string, LessonRow>();
  let pageToken = "";
  for (let page = 0; page < 100; page++) {
    const body = await read(ctx, RPC.lessons, { run_id: runId, limit: 500, page_token: pageToken });
    for (const l of body["lessons"] as JsonObject[]) {
      out.set(String(l["id"]), { id: String(l["id"]), content: String(l["content"]), reinforcementCount: Number(l["reinforcement_count"] ?? 0) });
    }
    pageToken = String(body["next_page_token"] ?? "");
    if (pageToken === "") return out;
  }
  throw new Error("lessons did not end after 100 pages");
}

/** Every node of a core run, through the vector index: runs are kept under the search's limit of 100. */
export async function coreNodes(ctx: Ctx, runId: string): Promise<NodeRow[]> {
  const body = await read(ctx, RPC.search, { query_text: "crash probe node", k: 100, run_id: runId });
  return (body["results"] as JsonObject[]).map((r) => ({ id: String(r["node_id"]), text: String(r["text"]) }));
}

export async function pad(ctx: Ctx, sessionId: string): Promise<PadRow[]> {
  const body = await read(ctx, RPC.readPad, { session_id: sessionId, limit: 1000 });
  return (body["entries"] as JsonObject[]).map((e) => ({ content: String(e["content"]), key: String(e["key"] ?? "") }));
}

function versionRow(v: JsonObject, text: string): VersionRow {
  return { versionId: String(v["version_id"]), content: text, status: String(v["status"]), source: String(v["source"]) };
}

export async function versions(ctx: Ctx, model: Versioned): Promise<VersionRow[]> {
  if (model.id === undefined) return [];
  if (model.kind === "skill") {
    const body = await readOptional(ctx, RPC.skillVersions, { skill_id: model.id, limit: 100 });
    return ((body?.["versions"] ?? []) as JsonObject[]).map((v) => versionRow(v, String(v["instructions"])));
  }
  const rows: VersionRow[] = [];
  let pageToken = "";
  for (let page = 0; page < 100; page++) {
    const body = await readOptional(ctx, RPC.promptVersions, { agent_id: model.id, limit: 100, page_token: pageToken });
    if (body === undefined) return rows;
    for (const v of body["versions"] as JsonObject[]) rows.push(versionRow(v, String(v["content"])));
    pageToken = String(body["next_page_token"] ?? "");
    if (pageToken === "") return rows;
  }
  throw new Error("prompt versions did not end after 100 pages");
}

export async function observe(ctx: Ctx): Promise<Observation> {
  const entries = await activity(ctx);
  const byMarker = new Map<string, ActivityRow[]>();
  for (const row of entries) {
    const marker = markerOf(row.content);
    if (marker !== undefined) byMarker.set(marker, [...(byMarker.get(marker) ?? []), row]);
  }
  const runTotals = new Map<string, number>();
  const lessonMap = new Map<string, Map<string, LessonRow>>();
  for (const run of ctx.world.liveRuns()) {
    const body = await read(ctx, RPC.activity, { run_id: run.id, limit: 1 });
    runTotals.set(run.id, Number(body["total_visible"] ?? 0));
    lessonMap.set(run.id, await lessons(ctx, run.id));
  }
  const nodes = new Map<string, NodeRow[]>();
  const pads = new Map<string, PadRow[]>();
  const versionMap = new Map<Versioned, VersionRow[]>();
  for (const client of ctx.world.clients) {
    nodes.set(client.coreRun.id, await coreNodes(ctx, client.coreRun.id));
    pads.set(client.pad.id, await pad(ctx, client.pad.id));
  }
  for (const model of ctx.world.versioned()) versionMap.set(model, await versions(ctx, model));
  return { entries, byMarker, runTotals, lessons: lessonMap, nodes, pads, versions: versionMap };
}

export function rowsOf(obs: Observation, marker: string): readonly ActivityRow[] {
  return obs.byMarker.get(marker) ?? [];
}
