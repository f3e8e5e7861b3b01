// Builds each probe's request: the route's plain fields (so the call gets past validation to its lookups), the
// caller's own record in every id field, and the probed value in one of them.
import type { Json, JsonObject } from "../harness/callers.js";
import { kindOf, type Kind } from "./id-kinds.js";
import type { IdField, Route } from "./route-catalog.js";

interface RequestShape {
  /** Fields other than ids the route needs to reach its lookups. */
  readonly base?: JsonObject;
  /** Id fields sent only when probed (aliases of another field, or fields that change what the others mean). */
  readonly onlyWhenProbed?: readonly string[];
  /** Extra fields when a given id field is probed, e.g. the filter type that reads it. */
  readonly whenProbing?: Readonly<Record<string, JsonObject>>;
  /** When the key field is probed, the value field takes the probed value too (two names of one thing). */
  readonly sameAs?: Readonly<Record<string, string>>;
}

const ITEM = "Probe note: the harbour crane is serviced on mondays.";

const SHAPES: Readonly<Record<string, RequestShape>> = {
  "AuthService.CreateUser": { base: { role: "user" } },
  "MemoryService.Remember": { base: { content: ITEM } },
  "MemoryService.Recall": { base: { query: "harbour crane" } },
  "MemoryService.Ingest": { base: { items: [{ text: ITEM }] } },
  "MemoryService.BatchInsert": { base: { items: [{ text: ITEM }] } },
  "MemoryService.Query": { base: { query: "harbour crane" }, onlyWhenProbed: ["direct_lane"] },
  "MemoryService.GetContext": { base: { query: "harbour crane" } },
  "MemoryService.AppendActivity": { base: { activity: { type: "tool_call", payload: "probe payload" } } },
  "MemoryService.ArchiveBlock": { base: { content: "probe artifact" } },
  "MemoryService.Checkpoint": { base: { label: "probe", context_snapshot: "probe snapshot" } },
  "MemoryService.Forget": { base: { query: "harbour crane" } },
  "CoreService.InsertNode": { base: { text: "probe node" }, onlyWhenProbed: ["node_id", "session_id"] },
  "CoreService.BatchInsertNodes": { base: { nodes: [{ text: "probe node" }] }, onlyWhenProbed: ["nodes.node_id", "session_id"] },
  "CoreService.GetNode": { onlyWhenProbed: ["session_id"] },
  "CoreService.DeleteNode": { onlyWhenProbed: ["session_id"] },
  "CoreService.SearchNodes": { base: { query_text: "probe node", k: 5 }, onlyWhenProbed: ["session_id"] },
  "CoreService.WriteScratchpad": { base: { content: "probe scratch" }, onlyWhenProbed: ["txn_session_id"] },
  "CoreService.ReadScratchpad": { onlyWhenProbed: ["txn_session_id", "key", "agent_id"] },
  "CoreService.CommitCoreSession": { onlyWhenProbed: ["session_id"], sameAs: { session_id: "id" } },
  "CoreService.SnapshotCoreSession": { onlyWhenProbed: ["session_id"], sameAs: { session_id: "id" } },
  "CoreService.GrantPermission": { base: { principal_type: "user", permission: "read" }, onlyWhenProbed: ["node_id", "lane"] },
  "CoreService.RevokePermission": { base: { principal_type: "user", permission: "read" }, onlyWhenProbed: ["node_id", "lane"] },
  "CoreService.CheckPermission": { base: { principal_type: "user", permission: "read" }, onlyWhenProbed: ["node_id", "lane"] },
  "CoreService.SubscribeCoreEvents": {
    base: { filter_type: "all" },
    onlyWhenProbed: ["node_id", "session_id"],
    whenProbing: { node_id: { filter_type: "node" }, session_id: { filter_type: "session" } },
  },
  "CoreService.TriggerCompaction": { base: { wait: false } },
  "LearningService.Diagnose": { base: { error_text: "connection timeout while deploying" } },
  "LearningService.Reflect": { base: { lessons: [{ content: "Probe lesson: check the crane first.", lesson_type: "success" }] }, onlyWhenProbed: ["checkpoint_id", "lessons.lesson_id"] },
  "LearningService.ResolveLessonPromotion": { base: { resolution: "refuse", reason: "probe" } },
  "LearningService.UpdateLesson": { base: { importance: "high", reason: "probe" }, onlyWhenProbed: ["lane"] },
  "LearningService.RecordOutcome": { base: { outcome: "success", rationale: "probe" }, onlyWhenProbed: ["idempotency_key"] },
  "LearningService.RecordStepOutcome": { base: { step_name: "probe step", outcome: "success" } },
  // A retention policy names a run or a project, never both: each is sent only when probed (neither: the owner's).
  "RunsService.SetRetentionPolicy": { base: { policy: { rules: [{ entry_type: "trace", max_age_seconds: 86400 }] } }, onlyWhenProbed: ["run_id", "project_id"] },
  "RunsService.GetRetentionPolicy": { onlyWhenProbed: ["run_id", "project_id"] },
  "RunsService.ClearRetentionPolicy": { onlyWhenProbed: ["run_id", "project_id"] },
  "CoordinationService.RegisterAgent": { base: { role: "worker" } },
  "CoordinationService.AgentHeartbeat": { base: { status: "busy" } },
  "CoordinationService.CreateHandoff": { base: { content: "probe handoff" } },
  "CoordinationService.SubmitFeedback": { base: { verdict: "acknowledge", comments: "probe" } },
  "CoordinationService.ListHandoffs": { onlyWhenProbed: ["to_agent_id", "from_agent_id"] },
  "PlanningService.AddGoal": { base: { description: "probe goal" }, onlyWhenProbed: ["parent_id", "parent_goal_id"] },
  "PlanningService.UpdateGoal": { base: { status: "suspended" } },
  "PlanningService.SetVariable": { base: { value_json: "1" } },
  "PlanningService.DefineConcept": { base: { description: "probe concept" } },
  "PlanningService.SubmitAction": { base: { action_type: "reason", action_json: "{}" } },
  "PlanningService.RunCycle": { base: { candidates: [{ action_type: "reason", action_json: "{}", score: 1 }], observation: "probe" } },
  // Without a run_id each call opens a session on a new run, so the other fields are checked, not the run's session.
  "SessionsService.CreateControlSession": { base: { description: "probe session" }, onlyWhenProbed: ["run_id"] },
  "ResourcesService.CreateProject": { base: { description: "probe project" } },
  "ResourcesService.UpdateProject": { base: { description: "probe update" }, onlyWhenProbed: ["name"] },
  "ResourcesService.DeleteProject": { base: { force: true } },
  "ResourcesService.CreateAgentDefinition": { base: { role: "worker", system_prompt_content: "probe prompt" } },
  "ResourcesService.UpdateAgentDefinition": { base: { description: "probe update" } },
  "ResourcesService.SetPrompt": { base: { content: "probe prompt version" }, onlyWhenProbed: ["run_id"] },
  "ResourcesService.GetPrompt": { onlyWhenProbed: ["version_id"] },
  "ResourcesService.OptimizePrompt": { onlyWhenProbed: ["run_id"] },
  "ResourcesService.CreateSkill": { base: { description: "probe skill", instructions: "probe instructions" } },
  "ResourcesService.ListSkills": { onlyWhenProbed: ["agent_id"] },
  "ResourcesService.UpdateSkill": { base: { description: "probe update" }, onlyWhenProbed: ["name"] },
};

/**
 * When a route runs in the matrix: reads and writes first (0), then routes that settle or undo something (1), then
 * those that remove a record (2), then those that remove what holds other records (3), so each still finds the caller's
 * records that it names.
 */
export function probeRank(route: Route): number {
  const name = route.method.name;
  if (/^(DeleteProject|DeleteAgentDefinition|DeleteRun|DeleteRunNodes)$/.test(name)) return 3;
  if (/^(Delete|Drop|Clear|Commit|Close)/.test(name)) return 2;
  if (/^(Resolve|Load|Revoke|Unlink|Unsubscribe)/.test(name)) return 1;
  return 0;
}

function setAt(request: JsonObject, route: Route, field: IdField, value: string): void {
  const names = field.path.split(".");
  let target: JsonObject = request;
  let message = route.method.input;
  for (const name of names.slice(0, -1)) {
    const descriptor = message.fields.find((f) => f.name === name);
    if (descriptor === undefined || (descriptor.fieldKind !== "message" && descriptor.fieldKind !== "list") || descriptor.message === undefined) {
      throw new Error(`${route.name}: ${field.path} does not go through messages`);
    }
    if (descriptor.fieldKind === "list") {
      const items = (target[name] as JsonObject[] | undefined) ?? [{}];
      target[name] = items;
      target = items[0] as JsonObject;
    } else {
      target[name] = (target[name] as JsonObject | undefined) ?? {};
      target = target[name] as JsonObject;
    }
    message = descriptor.message;
  }
  const leaf = names[names.length - 1] as string;
  target[leaf] = field.list ? [value] : value;
}

export interface Probe {
  readonly field: IdField;
  readonly value: string;
}

/**
 * The request of one probe: the caller's own id in every id field (`own`), `probe.value` in the probed one. Without a
 * probe, the plain call: every id field that is not `onlyWhenProbed` holds the caller's own record.
 */
export function requestFor(route: Route, own: (kind: Kind) => string, probe?: Probe): JsonObject {
  const shape = SHAPES[route.name] ?? {};
  const request = structuredClone(shape.base ?? {}) as { [key: string]: Json };
  if (probe !== undefined) Object.assign(request, structuredClone(shape.whenProbing?.[probe.field.path] ?? {}));
  const alias = probe === undefined ? undefined : shape.sameAs?.[probe.field.path];
  for (const field of route.idFields) {
    if (probe !== undefined && (field.path === probe.field.path || field.path === alias)) {
      setAt(request, route, field, probe.value);
      continue;
    }
    if (shape.onlyWhenProbed?.includes(field.path)) continue;
    const kind = kindOf(route, field);
    if (kind !== undefined) setAt(request, route, field, own(kind));
  }
  return request;
}
