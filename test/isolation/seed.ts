// Gives an owner one record of every kind a route can name (entries, a lesson, an ingest job, a core node, a core
// transaction and its snapshot, a scratchpad, a live subscription, a project with an agent definition, prompt
// versions and a skill, a control session, a handoff, a goal, a variable, an outcome...), every text carrying the
// owner's marker, and returns their ids.
import { restCaller, type JsonObject } from "../harness/callers.js";
import { waitForJob } from "../harness/memory.js";
import { openStream, type OpenStream } from "./event-stream.js";
import type { Kind, LabelKind } from "./id-kinds.js";
import { must } from "./route-caller.js";

export interface Owner {
  readonly username: string;
  readonly key: string;
  /** The server's numeric id of the user, and the id of its API key (both in GetUser's answer). */
  readonly userId: string;
  readonly keyId: string;
  /** One record of each kind, all this owner's. */
  readonly ids: Readonly<Record<Kind, string>>;
  /** Every id the server assigned while seeding, including those not in `ids`. */
  readonly assigned: readonly string[];
  /** The owner's live core subscription (its id is `ids.subscription`). */
  readonly subscription: OpenStream;
}

const M = "engram.v2.MemoryService/";
const L = "engram.v2.LearningService/";
const C = "engram.v2.CoreService/";
const P = "engram.v2.PlanningService/";
const R = "engram.v2.ResourcesService/";

/** Waits (a bounded poll) until an ingest job is done. */
export async function jobDone(baseUrl: string, key: string, jobId: string): Promise<void> {
  await waitForJob(restCaller(baseUrl), key, jobId);
}

function field(body: JsonObject, ...path: string[]): string {
  let value: unknown = body;
  for (const name of path) value = (value as Record<string, unknown> | undefined)?.[name];
  if (typeof value !== "string" && typeof value !== "number") throw new Error(`no ${path.join(".")} in ${JSON.stringify(body)}`);
  return String(value);
}

/** Seeds `username`'s records named by `names`, each text carrying `marker`. */
export async function seedOwner(baseUrl: string, username: string, key: string, names: Readonly<Record<LabelKind, string>>, marker: string): Promise<Owner> {
  const assigned: string[] = [];
  const call = async (rpc: string, request: JsonObject): Promise<JsonObject> => must(baseUrl, rpc, request, key);
  const keep = (id: string): string => {
    assigned.push(id);
    return id;
  };
  const run = names.run;
  const agent = names.agent;
  const entry = keep(field(await call(`${M}Remember`, { session_id: run, agent_id: agent, user_id: names.userLabel, content: `${marker} The deploy runbook lives in the wiki.` }), "entry_id"));
  keep(field(await call(`${M}Remember`, { session_id: run, agent_id: agent, content: `${marker} The staging cache is flushed nightly.` }), "entry_id"));
  keep(field(await call(`${M}Remember`, { session_id: names.otherRun, agent_id: agent, content: `${marker} The other run keeps the release notes.` }), "entry_id"));
  const job = keep(
    field(
      await call(`${M}Ingest`, {
        run_id: run,
        agent_id: agent,
        idempotency_key: names.ingestKey,
        items: [{ item_id: names.item, text: `${marker} Payments deploy on fridays.`, upsert_key: names.upsertKey, lane: names.lane, user_id: names.userLabel }],
      }),
      "job_id",
    ),
  );
  await jobDone(baseUrl, key, job);
  const reference = keep(field(await call(`${M}ArchiveBlock`, { run_id: run, agent_id: agent, source_attempt_id: names.attempt, content: `${marker} artifact body` }), "reference_id"));
  const checkpoint = keep(field(await call(`${M}Checkpoint`, { run_id: run, label: "before", context_snapshot: `${marker} checkpoint text` }), "checkpoint_id"));
  const reflected = await call(`${L}Reflect`, { run_id: run, step_id: names.step, agent_id: agent, lessons: [{ content: `${marker} Always warm the cache before a deploy.`, lesson_type: "success" }] });
  const lesson = keep(field(((reflected["lessons"] as JsonObject[] | undefined)?.[0] ?? {}) as JsonObject, "lesson_id"));
  await call(`${L}RecordOutcome`, { run_id: run, reference_id: lesson, outcome: "success", rationale: marker, idempotency_key: names.outcomeKey });
  await call(`${L}RecordStepOutcome`, { run_id: run, step_id: names.step, step_name: "warm cache", outcome: "success", rationale: marker });
  await call("engram.v2.CoordinationService/RegisterAgent", { run_id: run, agent_id: agent, role: "worker", shared_memory_lanes: [names.lane] });
  const handoff = keep(field(await call("engram.v2.CoordinationService/CreateHandoff", { run_id: run, task_id: names.task, from_agent_id: agent, to_agent_id: `${agent}-peer`, content: `${marker} please review` }), "handoff_id"));
  await call(`${P}SetVariable`, { run_id: run, name: names.variable, value_json: JSON.stringify(marker) });
  await call(`${P}DefineConcept`, { run_id: run, name: names.concept, description: `${marker} concept` });
  const goal = keep(field(await call(`${P}AddGoal`, { run_id: run, description: `${marker} ship the release` }), "id"));
  await call("engram.v2.RunsService/LinkRun", { run_id: run, linked_run_id: names.otherRun });
  const node = keep(field(await call(`${C}InsertNode`, { run_id: run, text: `${marker} core node`, metadata_json: JSON.stringify({ mark: marker }) }), "node_id"));
  const coreSession = keep(field(await call(`${C}CreateCoreSession`, {}), "session_id"));
  keep(field(await call(`${C}InsertNode`, { run_id: run, text: `${marker} staged node`, session_id: coreSession }), "node_id"));
  await call(`${C}SnapshotCoreSession`, { id: coreSession, path: names.snapshot });
  await call(`${C}WriteScratchpad`, { session_id: names.scratchpad, key: names.scratchKey, content: `${marker} scratch`, agent_id: agent });
  const project = keep(field(await call(`${R}CreateProject`, { name: names.projectName, description: `${marker} project` }), "project", "project_id"));
  await call(`${R}CreateAgentDefinition`, { project_id: project, agent_id: agent, role: "worker", system_prompt_content: `${marker} You deploy.` });
  const promptVersion = keep(field(await call(`${R}SetPrompt`, { project_id: project, agent_id: agent, content: `${marker} You deploy, carefully.` }), "version", "version_id"));
  const skill = await call(`${R}CreateSkill`, { project_id: project, agent_id: agent, name: names.skillName, description: `${marker} skill`, instructions: `${marker} do it` });
  const skillId = keep(field(skill, "skill", "skill_id"));
  const skillVersion = keep(field(skill, "skill", "active_version_id"));
  const controlSession = keep(
    field(await call("engram.v2.SessionsService/CreateControlSession", { agent_id: agent, project_id: project, description: `${marker} session` }), "session", "session_id"),
  );
  const subscription = await openStream(baseUrl, `${C}SubscribeCoreEvents`, { filter_type: "all", run_id: names.otherRun }, key);
  const subscribed = await subscription.next();
  const subscriptionId = keep(field(subscribed, "subscription_id"));
  const ids: Record<Kind, string> = {
    ...names,
    entry,
    lesson,
    reference,
    checkpoint,
    job,
    node,
    coreSession,
    subscription: subscriptionId,
    project,
    promptVersion,
    skill: skillId,
    skillVersion,
    controlSession,
    handoff,
    goal,
    username,
  };
  const user = (await call("engram.v2.AuthService/GetUser", { username }))["user"] as JsonObject;
  return { username, key, userId: field(user, "user_id"), keyId: field(user, "key_id"), ids, assigned, subscription };
}
