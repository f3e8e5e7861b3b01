// Workload steps on prompts and skills: new versions (activated at once or kept as candidates) and activations of
// earlier versions. Whatever is killed, an agent or a skill has at most one active version, and it is one the
// acknowledged history allows.
import type { JsonObject } from "../harness/callers.js";
import { call, read, violation, type Ctx } from "./context.js";
import { markerOf, sharedOf, Versioned, type ClientWorld, type VersionModel } from "./model.js";
import type { Observation } from "./observe.js";

/**
 * A prompt or skill is replaced by a fresh one at this many versions written, or listed (activating a retired
 * version adds a rollback copy), so that one listing of at most 100 shows them all.
 */
export const VERSION_CAPACITY = 25;
const LISTED_CAPACITY = 50;

function full(model: Versioned, capacity: number): boolean {
  return model.versions.size >= capacity || model.listed >= LISTED_CAPACITY;
}

const RPC = {
  setPrompt: "engram.v2.ResourcesService/SetPrompt",
  activatePrompt: "engram.v2.ResourcesService/ActivatePromptVersion",
  createSkill: "engram.v2.ResourcesService/CreateSkill",
  updateSkill: "engram.v2.ResourcesService/UpdateSkill",
  activateSkill: "engram.v2.ResourcesService/ActivateSkillVersion",
  listSkills: "engram.v2.ResourcesService/ListSkills",
} as const;

function text(kind: Versioned["kind"], marker: string): string {
  return `Crash probe ${kind} ${marker}: answer briefly.`;
}

/** Settles an unanswered version write or activation from the versions now listed. */
function resolveVersions(route: string, model: Versioned, created: VersionModel | undefined): (obs: Observation, ctx: Ctx) => void {
  return (obs, ctx) => {
    const rows = obs.versions.get(model) ?? [];
    if (created !== undefined) {
      const n = rows.filter((r) => r.source !== "rollback" && markerOf(r.content) === created.marker).length;
      if (n > 1) violation(ctx, `${route} (unanswered) stored ${n} versions`);
      created.fate = n > 0 ? "present" : "absent";
      created.versionId = rows.find((r) => r.source !== "rollback" && markerOf(r.content) === created.marker)?.versionId;
    }
    const active = rows.filter((r) => r.status === "active").map((r) => markerOf(r.content) ?? "");
    // Several active versions are reported by the check of every versioned resource; which one is active is
    // foreseeable only for a resource one client writes.
    if (active.length > 1 || model.shared) return;
    const now = active[0];
    if (now === undefined ? model.active.size > 0 && !model.active.has("") : !model.active.has(now)) {
      violation(ctx, `${route} (unanswered): ${model.kind} ${model.name} has active version ${now ?? "none"}, expected one of ${[...model.active].join(", ")}`);
    }
    model.active = new Set(now === undefined ? [] : [now]);
  };
}

/** Records the answer of a request that creates a version; false when it got none. */
function versionWritten(ctx: Ctx, route: string, model: Versioned, version: VersionModel, activate: boolean, answer: Awaited<ReturnType<typeof call>>, versionId: (body: JsonObject) => string | undefined): boolean {
  if (answer.kind === "acked") {
    version.fate = "present";
    version.versionId = versionId(answer.body);
    if (activate && !model.shared) model.active = new Set([version.marker]);
    return true;
  }
  if (answer.kind === "refused") {
    version.fate = "absent";
    return true;
  }
  if (activate && !model.shared) {
    // The earlier active version may stay; "" stands for "no version active" when there was none.
    if (model.active.size === 0) model.active.add("");
    model.active.add(version.marker);
  }
  ctx.pending.push({ route, resolve: resolveVersions(route, model, version) });
  return false;
}

function newVersion(ctx: Ctx, model: Versioned): VersionModel {
  const version: VersionModel = { marker: ctx.world.marker(), versionId: undefined, fate: "maybe" };
  model.versions.set(version.marker, version);
  return version;
}

function renewed(model: Versioned, client: ClientWorld): Versioned {
  client.generation++;
  const fresh = new Versioned(model.kind, model.name.replace(/-g\d+$|_g\d+$/, (m) => `${m[0]}g${client.generation}`));
  if (fresh.kind === "prompt") fresh.id = fresh.name;
  return fresh;
}

export async function setPrompt(ctx: Ctx, client: ClientWorld, shared: boolean): Promise<boolean> {
  if (!shared && full(client.prompt, VERSION_CAPACITY)) client.prompt = renewed(client.prompt, client);
  const model = shared ? ctx.world.sharedPrompt : client.prompt;
  const version = newVersion(ctx, model);
  const activate = model.active.size === 0 || ctx.rng.chance(0.7);
  const answer = await call(ctx, "prompt set", RPC.setPrompt, { agent_id: model.id ?? model.name, content: text("prompt", version.marker), activate });
  return versionWritten(ctx, "prompt set", model, version, activate, answer, (b) => String((b["version"] as JsonObject)["version_id"]));
}

async function activate(ctx: Ctx, model: Versioned, route: string, rpc: string, request: (v: VersionModel) => JsonObject): Promise<boolean> {
  const known = [...model.versions.values()].filter((v) => v.fate === "present" && v.versionId !== undefined);
  if (known.length === 0) return true;
  const version = ctx.rng.pick(known);
  const answer = await call(ctx, route, rpc, request(version));
  if (answer.kind === "acked" && !model.shared) model.active = new Set([version.marker]);
  if (answer.kind !== "unknown") return true;
  if (!model.shared) model.active.add(version.marker);
  ctx.pending.push({ route, resolve: resolveVersions(route, model, undefined) });
  return false;
}

export function activatePrompt(ctx: Ctx, client: ClientWorld, shared: boolean): Promise<boolean> {
  const model = shared ? ctx.world.sharedPrompt : client.prompt;
  return activate(ctx, model, "prompt activate", RPC.activatePrompt, (v) => ({ agent_id: model.id ?? "", version_id: v.versionId ?? "" }));
}

async function createSkill(ctx: Ctx, client: ClientWorld | undefined): Promise<boolean> {
  const model = client?.skill ?? ctx.world.sharedSkill;
  const version = newVersion(ctx, model);
  const answer = await call(ctx, "skill create", RPC.createSkill, { project_id: ctx.world.projectId, name: model.name, description: "crash loop skill", instructions: text("skill", version.marker) });
  if (answer.kind === "acked") {
    const skill = answer.body["skill"] as JsonObject;
    model.id = String(skill["skill_id"]);
    version.fate = "present";
    model.active = new Set([version.marker]);
    return true;
  }
  if (answer.kind === "refused") {
    version.fate = "absent";
    return true;
  }
  ctx.pending.push({
    route: "skill create",
    async before(c) {
      const skills = (await read(c, RPC.listSkills, { project_id: c.world.projectId, limit: 500 }))["skills"] as JsonObject[];
      const found = skills.filter((s) => s["name"] === model.name);
      if (found.length > 1) violation(c, `skill create (unanswered) made ${found.length} skills named ${model.name}`);
      version.fate = found.length > 0 ? "present" : "absent";
      if (found[0] !== undefined) {
        model.id = String(found[0]["skill_id"]);
        model.active = new Set([version.marker]);
      }
    },
  });
  return false;
}

export async function updateSkill(ctx: Ctx, client: ClientWorld, shared: boolean): Promise<boolean> {
  if (!shared && full(client.skill, VERSION_CAPACITY)) client.skill = renewed(client.skill, client);
  const model = shared ? ctx.world.sharedSkill : client.skill;
  if (model.id === undefined) return shared || createSkill(ctx, client);
  const version = newVersion(ctx, model);
  const activateNow = ctx.rng.chance(0.7);
  const answer = await call(ctx, "skill update", RPC.updateSkill, { skill_id: model.id, instructions: text("skill", version.marker), activate: activateNow });
  // The answer names the active version only: the check reads the new version's id from the list.
  return versionWritten(ctx, "skill update", model, version, activateNow, answer, () => undefined);
}

export async function activateSkill(ctx: Ctx, client: ClientWorld, shared: boolean): Promise<boolean> {
  const model = shared ? ctx.world.sharedSkill : client.skill;
  if (model.id === undefined) return shared || createSkill(ctx, client);
  return activate(ctx, model, "skill activate", RPC.activateSkill, (v) => ({ skill_id: model.id ?? "", version_id: v.versionId ?? "" }));
}

/** Shared prompts and skills grow with every client's writes: renewed between kills, created when missing. */
const SHARED_CAPACITY = 40;

/** Between kills (no client runs): renews the full shared prompt and skill and creates the shared skill. */
export async function prepareShared(ctx: Ctx): Promise<void> {
  const world = ctx.world;
  if (full(world.sharedPrompt, SHARED_CAPACITY)) world.sharedPrompt = sharedOf("prompt", world.sharedPrompt.name.replace(/g(\d+)$/, (_m, n: string) => `g${Number(n) + 1}`));
  if (full(world.sharedSkill, SHARED_CAPACITY)) world.sharedSkill = sharedOf("skill", world.sharedSkill.name.replace(/g(\d+)$/, (_m, n: string) => `g${Number(n) + 1}`));
  if (world.sharedSkill.id === undefined) await createSkill(ctx, undefined);
}
