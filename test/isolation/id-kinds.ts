// Which kind of record each id or scope field of each route names, so the matrix can put another owner's real one
// (or a never-existing one of the same shape) in it. A field without a mapping fails the test: that is how a new route
// is covered.
import type { IdField, Route } from "./route-catalog.js";

/** Names an owner chooses (run names, agent ids, keys...): the same text is a different record for each owner. */
export const LABEL_KINDS = [
  "run",
  "otherRun",
  "agent",
  "userLabel",
  "step",
  "task",
  "item",
  "attempt",
  "lane",
  "upsertKey",
  "ingestKey",
  "outcomeKey",
  "variable",
  "concept",
  "projectName",
  "skillName",
  "scratchpad",
  "scratchKey",
  "snapshot",
] as const;

/** Ids the server assigns. */
export const SERVER_KINDS = [
  "entry",
  "lesson",
  "reference",
  "checkpoint",
  "job",
  "node",
  "coreSession",
  "subscription",
  "project",
  "promptVersion",
  "skill",
  "skillVersion",
  "controlSession",
  "handoff",
  "goal",
  "username",
] as const;

export type LabelKind = (typeof LABEL_KINDS)[number];
export type ServerKind = (typeof SERVER_KINDS)[number];
export type Kind = LabelKind | ServerKind;
export const KINDS: readonly Kind[] = [...LABEL_KINDS, ...SERVER_KINDS];

/** What a field means wherever it appears, unless the route says otherwise below. */
const BY_FIELD: Readonly<Record<string, Kind>> = {
  run_id: "run",
  run_ids: "run",
  linked_run_id: "otherRun",
  agent_id: "agent",
  from_agent_id: "agent",
  to_agent_id: "agent",
  origin_agent_id: "agent",
  user_id: "userLabel",
  step_id: "step",
  task_id: "task",
  item_id: "item",
  source_attempt_id: "attempt",
  lane: "lane",
  lane_filter: "lane",
  direct_lane: "lane",
  upsert_key: "upsertKey",
  entry_ids: "entry",
  source_entry_ids: "entry",
  lesson_id: "lesson",
  checkpoint_id: "checkpoint",
  job_id: "job",
  node_id: "node",
  txn_session_id: "coreSession",
  parent_session_id: "coreSession",
  subscription_id: "subscription",
  project_id: "project",
  skill_id: "skill",
  handoff_id: "handoff",
  goal_id: "goal",
  parent_id: "goal",
  parent_goal_id: "goal",
  root_goal_id: "goal",
  username: "username",
  // ACL principals are users here (the base requests send principal_type "user").
  principal_id: "username",
  path: "snapshot",
};

const PROMPT_VERSIONS = { version_id: "promptVersion", version_a_id: "promptVersion", version_b_id: "promptVersion" } as const;
const SKILL_VERSIONS = { version_id: "skillVersion", version_a_id: "skillVersion", version_b_id: "skillVersion" } as const;
const CORE_TXN = { session_id: "coreSession" } as const;
const SCRATCHPAD = { session_id: "scratchpad", key: "scratchKey" } as const;

/** Per route, what its ambiguous fields (`id`, `session_id`, `name`, `version_id`, `reference_id`...) name. */
const BY_ROUTE: Readonly<Record<string, Readonly<Record<string, Kind>>>> = {
  "MemoryService.Remember": { session_id: "run" },
  "MemoryService.Recall": { session_id: "run" },
  "MemoryService.Ingest": { idempotency_key: "ingestKey" },
  "MemoryService.Dereference": { reference_id: "reference" },
  "CoreService.InsertNode": CORE_TXN,
  "CoreService.BatchInsertNodes": CORE_TXN,
  "CoreService.GetNode": { id: "node", ...CORE_TXN },
  "CoreService.DeleteNode": { id: "node", ...CORE_TXN },
  "CoreService.SearchNodes": CORE_TXN,
  "CoreService.WriteScratchpad": SCRATCHPAD,
  "CoreService.ReadScratchpad": SCRATCHPAD,
  "CoreService.ClearScratchpad": SCRATCHPAD,
  "CoreService.CommitCoreSession": { id: "coreSession", ...CORE_TXN },
  "CoreService.DropCoreSession": { id: "coreSession" },
  "CoreService.SnapshotCoreSession": { id: "coreSession", ...CORE_TXN },
  // A `session` filter names a scratchpad session.
  "CoreService.SubscribeCoreEvents": { session_id: "scratchpad" },
  "LearningService.RecordOutcome": { reference_id: "lesson", idempotency_key: "outcomeKey" },
  "PlanningService.SetVariable": { name: "variable" },
  "PlanningService.GetVariable": { name: "variable" },
  "PlanningService.DeleteVariable": { name: "variable" },
  "PlanningService.DefineConcept": { name: "concept" },
  "SessionsService.GetControlSession": { session_id: "controlSession" },
  "SessionsService.CloseControlSession": { session_id: "controlSession" },
  "ResourcesService.CreateProject": { name: "projectName" },
  "ResourcesService.UpdateProject": { name: "projectName" },
  "ResourcesService.GetPrompt": PROMPT_VERSIONS,
  "ResourcesService.ActivatePromptVersion": PROMPT_VERSIONS,
  "ResourcesService.GetPromptDiff": PROMPT_VERSIONS,
  "ResourcesService.CreateSkill": { name: "skillName" },
  "ResourcesService.UpdateSkill": { name: "skillName" },
  "ResourcesService.ActivateSkillVersion": SKILL_VERSIONS,
  "ResourcesService.GetSkillDiff": SKILL_VERSIONS,
};

/**
 * Routes whose id fields name nothing an owner owns, so they are not probed. Each says why. Keep this short: a route
 * listed here gets no isolation check beyond the twin comparison of its plain call. Empty today: even the user-admin
 * routes are probed (a user gets PERMISSION_DENIED alike for a real username and for one that does not exist).
 */
export const NOT_OWNER_SCOPED: Readonly<Record<string, string>> = {};

/**
 * Probes whose different answers are a documented design, not a leak. Each says why. Keyed `Route.Name field`.
 */
export const DOCUMENTED_DIFFERENCES: Readonly<Record<string, string>> = {
  "CoreService.GrantPermission principal_id":
    "a username is the address a run is shared to, not a record of that user: granting to a user that does not exist " +
    "is refused (NOT_FOUND) so that a typo cannot hand a run to whoever takes the name later",
  "CoreService.CheckPermission principal_id": "follows from GrantPermission's: B's grant to A's username exists, C's grant to a ghost was refused",
  "CoreService.RevokePermission principal_id": "follows from GrantPermission's: B's grant to A's username exists, C's grant to a ghost was refused",
};

/** Routes whose answers are not compared between the twins, each with why. */
export const NOT_COMPARED: Readonly<Record<string, string>> = {
  "HealthService.Metrics":
    "process-wide Prometheus metrics, unauthenticated by the spec for operators: the counts are of every user by " +
    "design; their labels are checked apart (they never name a user, an id or content)",
  "TenantService.ExportTenant":
    "a page ends after 5 ms of work, so where the first page ends depends on timing; each twin's whole export is " +
    "compared apart, and checked for A's content and ids",
};

export function kindOf(route: Route, field: IdField): Kind | undefined {
  const leaf = field.path.split(".").pop() ?? field.path;
  return BY_ROUTE[route.name]?.[field.path] ?? BY_ROUTE[route.name]?.[leaf] ?? BY_FIELD[leaf];
}

/** `Route.Name field` for every id field that has no kind: each one is a route the matrix cannot cover yet. */
export function unmappedFields(routes: readonly Route[]): string[] {
  const missing: string[] = [];
  for (const route of routes) {
    if (route.name in NOT_OWNER_SCOPED) continue;
    for (const field of route.idFields) {
      if (kindOf(route, field) === undefined) missing.push(`${route.name} ${field.path}`);
    }
  }
  return missing;
}
