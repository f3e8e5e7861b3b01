// The JSON shapes the console reads, as the HTTP gateway writes them (proto field names; int64 values arrive as strings).

export interface RunSummary {
  run_id: string;
  entry_count: number;
  entry_counts: Record<string, number>;
  linked_run_ids: string[];
  agent_ids: string[];
  created_at: string;
  last_activity_at: string;
  session_phase: string;
  /** The run's own retention policy; absent when it has none. */
  retention?: RetentionPolicy;
}

export interface RetentionPolicy {
  rules: { entry_type: string; max_age_seconds: string }[];
  updated_at: string;
}

export interface ListRunsResponse {
  runs: RunSummary[];
  next_page_token: string;
  total_visible: number;
}

/** Where an entry's text came from, who wrote it and how far it is trusted. */
export interface Provenance {
  origin: string;
  tool_name: string;
  url: string;
  trust: string;
  key_id: string;
  agent_id: string;
  flags: string[];
}

export interface ActivityEntry {
  id: string;
  run_id: string;
  agent_id: string;
  entry_type: string;
  content: string;
  source: string;
  importance: string;
  created_at: string;
  lane: string;
  is_stale: boolean;
  derived: boolean;
  provenance?: Provenance | null;
}

export interface ListActivityResponse {
  entries: ActivityEntry[];
  next_page_token: string;
  total_visible: number;
}

export interface IngestStats {
  total_ingested: number;
  by_type: Record<string, number>;
  last_ingest_at: string;
}

export interface AgentIdentity {
  agent_id: string;
  role: string;
  capabilities: string[];
  status: string;
  heartbeat_at: string;
  shared_memory_lanes: string[];
  liveness: string;
  progress: string;
}

export interface HandoffFeedback {
  feedback_id: string;
  verdict: string;
  comments: string;
  from_agent_id: string;
  created_at: string;
}

export interface Handoff {
  handoff_id: string;
  task_id: string;
  from_agent_id: string;
  to_agent_id: string;
  content: string;
  requested_action: string;
  status: string;
  created_at: string;
  feedback: HandoffFeedback[];
}

export interface ExplainInfo {
  semantic_score: number;
  lexical_score: number;
  recency_score: number;
  stale_penalty_applied: boolean;
  fusion_weights_used: Record<string, number>;
  rank_by_mode: string;
}

export interface Evidence {
  id: string;
  content: string;
  score: number;
  is_stale: boolean;
  retrieval_mode: string;
  origin_entry_type: string;
  run_id: string;
  agent_id: string;
  created_at: string;
  explain_info?: ExplainInfo | null;
  provenance?: Provenance | null;
}

export interface QueryResponse {
  final_answer: string;
  confidence: number;
  mode: string;
  evidence: Evidence[];
  citations: number[];
  degraded: boolean;
  consulted_runs: string[];
  routing_summary: string;
}

export interface SectionSummary {
  section_name: string;
  item_count: number;
  top_item_preview: string;
  estimated_tokens: number;
}

export interface ContextResponse {
  context_block: string;
  token_estimate: number;
  sources: Evidence[];
  budget_used: number;
  budget_remaining: number;
  section_summaries: SectionSummary[];
  source_counts_by_entry_type: Record<string, number>;
  evidence_candidates_considered: number;
  evidence_dropped_by_budget: number;
  exact_references_surfaced: number;
  empty_reason: string;
  requested_token_budget: number;
}

export interface LessonAuditEvent {
  at: string;
  field: string;
  old_value: string;
  new_value: string;
  reason: string;
  agent_id: string;
}

export interface LessonEntry {
  id: string;
  content: string;
  lesson_type: string;
  scope: string;
  importance: string;
  conditions: string[];
  rationale: string;
  source_run_id: string;
  validation_status: string;
  stale: boolean;
  confidence: number;
  promotion_state: string;
  promotion_target_scope: string;
  reinforcement_count: number;
  verified_in_production: boolean;
  created_at: string;
  updated_at: string;
  audit_trail: LessonAuditEvent[];
  promotion_refused: boolean;
  provenance?: Provenance | null;
}

export interface ListLessonsResponse {
  lessons: LessonEntry[];
  next_page_token: string;
}

export interface ResolvePromotionResponse {
  success: boolean;
  lesson: LessonEntry;
}

export interface Project {
  project_id: string;
  name: string;
  description: string;
  agent_ids: string[];
  created_at: string;
  updated_at: string;
}

export interface AgentDefinition {
  agent_id: string;
  project_id: string;
  role: string;
  description: string;
  active_prompt_version_id: string;
}

/** The fields prompt versions and skill versions share, all the version list and diff views need. */
export interface Version {
  version_id: string;
  status: string;
  version_number: number;
  source: string;
  created_at: string;
  optimization_summary: string;
  avg_outcome_score: number;
  outcome_count: number;
}

export interface Skill {
  skill_id: string;
  name: string;
  description: string;
  skill_type: string;
  agent_id: string;
  active_version_id: string;
}

export interface DiffResponse {
  diff_text: string;
}

export interface StorageStats {
  disk_size_bytes: string | number;
  databases: { name: string; key_count: string | number }[];
  indexes: { name: string; entry_count: string | number; size_bytes: string | number }[];
  vector_dimension: number;
  last_compaction_at: string;
  compaction_running: boolean;
}

export interface SeriesPoint {
  t: number;
  ingest_items_per_s: number;
  query_p50_ms: number | null;
  query_p99_ms: number | null;
  requests_per_s: number;
}

/** One API key's totals with one provider kind (`llm`, `embeddings`) since the server started. */
export interface ProviderCostRow {
  key_id: string;
  provider: string;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  seconds: number;
}

export interface HealthResponse {
  readiness: { status: "ready" | "not_ready"; reason?: string };
  storage: StorageStats | null;
  series: { interval_ms: number; points: SeriesPoint[] } | null;
  /** Every key's rows for an admin, the signed-in key's alone otherwise; empty when no provider was called. */
  provider_costs: ProviderCostRow[];
}
