// The MCP tool table: one entry per tool, naming the Engram RPC it calls and describing it for an LLM agent.
// Arguments are the RPC request in proto3 JSON and results are its response, so the protos stay the one contract.
import type { DescMessage, DescMethodUnary, JsonObject, MessageShape } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";
import type { EngramClient } from "../client/engram-client.js";
import { requestOf, responseJson } from "./tool-json.js";
import { CoordinationService } from "../../gen/engram/v2/coordination_service_pb.js";
import { LearningService } from "../../gen/engram/v2/learning_service_pb.js";
import { MemoryService } from "../../gen/engram/v2/memory_service_pb.js";

interface ToolSpec<I extends DescMessage, O extends DescMessage> {
  /** The MCP tool name (snake_case, stable). */
  readonly name: string;
  readonly title: string;
  /** What the tool does and when to use it, written for the agent that chooses tools. */
  readonly description: string;
  /** The RPC behind the tool: its request message is the tool's input, its response the result. */
  readonly method: DescMethodUnary<I, O>;
  /** True when the call changes nothing (MCP's `readOnlyHint`). */
  readonly readOnly: boolean;
  /** True when the call may erase what it cannot bring back (MCP's `destructiveHint`); false unless said. */
  readonly destructive?: boolean;
  readonly call: (client: EngramClient, request: MessageShape<I>, options: CallOptions) => Promise<MessageShape<O>>;
}

/** A tool with its RPC's types erased: it takes the request's JSON and gives the response's. */
export interface McpTool {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly method: DescMethodUnary;
  readonly readOnly: boolean;
  readonly destructive: boolean;
  /** Decodes `args` (a clear INVALID_ARGUMENT when they do not fit the request), calls the RPC, encodes the answer. */
  readonly invoke: (client: EngramClient, args: JsonObject, options: CallOptions) => Promise<JsonObject>;
}

/** Builds a table entry while the request and response types are still known. */
function tool<I extends DescMessage, O extends DescMessage>(spec: ToolSpec<I, O>): McpTool {
  const { call, ...rest } = spec;
  return {
    ...rest,
    destructive: spec.destructive ?? false,
    invoke: async (client, args, options) => responseJson(spec.method.output, await call(client, requestOf(spec.method.input, args), options)),
  };
}

export const MCP_TOOLS: readonly McpTool[] = [
  tool({
    name: "remember",
    title: "Remember a fact or lesson",
    description:
      "Store one fact or lesson in Engram memory, scoped to a session (the same scope as run_id elsewhere). Use it to keep " +
      "something worth knowing later: a user preference, a finding about the task, a decision and its reason. Required: " +
      "session_id, content. Set intent to `lesson` for reusable guidance, and lesson_scope to `global` to have the lesson " +
      "recalled in every session. Answers once the entry is durable, with its entry_id.",
    method: MemoryService.method.remember,
    readOnly: false,
    call: (client, request, options) => client.memory.remember(request, options),
  }),
  tool({
    name: "recall",
    title: "Recall from memory",
    description:
      "Answer a question from a session's memory (plus your global lessons): returns final_answer, its confidence, ranked " +
      "evidence (id, content, entry type, score, reference_id) and citations (indices into evidence that ground the " +
      "answer). Required: session_id, query. Use it before acting, to learn what is already known; filter with " +
      "entry_types and limit.",
    method: MemoryService.method.recall,
    readOnly: true,
    call: (client, request, options) => client.memory.recall(request, options),
  }),
  tool({
    name: "context",
    title: "Assemble a context block",
    description:
      "Assemble a context block ready to paste into a prompt: the run's most relevant rules, lessons, facts, working memory, " +
      "checkpoints, archived blocks and traces for `query`, grouped in sections and filled in priority order. Required: " +
      "run_id. Cap its size with max_token_budget (tokens); context_block is the text, sources the evidence it holds, and " +
      "pending_handoffs the open handoffs to agent_id.",
    method: MemoryService.method.getContext,
    readOnly: true,
    call: (client, request, options) => client.memory.getContext(request, options),
  }),
  tool({
    name: "archive",
    title: "Archive an exact artifact",
    description:
      "Store an artifact (code, a diff, a log, a document, a tool output) byte for byte in a run and get a stable " +
      "reference_id. Use it for content you may need verbatim later instead of remembering a summary; fetch it back with " +
      "dereference. Required: run_id, content (at most 1 MiB). Optional artifact_kind, labels and family (a newer block " +
      "of the same family supersedes the older).",
    method: MemoryService.method.archiveBlock,
    readOnly: false,
    call: (client, request, options) => client.memory.archiveBlock(request, options),
  }),
  tool({
    name: "dereference",
    title: "Fetch exact content by reference",
    description:
      "Fetch the exact stored content behind a reference_id: one returned by archive, a checkpoint id, or " +
      "evidence[].reference_id of a referenceable recall or context item. Answers found = false for a reference you have " +
      "no entry for. Required: reference_id; run_id optionally requires the entry to belong to that run.",
    method: MemoryService.method.dereference,
    readOnly: true,
    call: (client, request, options) => client.memory.dereference(request, options),
  }),
  tool({
    name: "forget",
    title: "Forget a subject",
    description:
      "Erase every entry of yours whose text holds all the words of `query` (a person's name, an identifier, a topic), " +
      "in two calls. First call it as is (dry_run defaults to true): nothing is erased, and you get `matched`, a sample " +
      "of the entries and a preview_token. Check the sample, then call again with the same query, run_ids and " +
      "entry_types, dry_run false and that preview_token: exactly the previewed entries are erased for good and you get " +
      "a receipt (erased counts by entry type, receipt_id). If your memory changed in between the erasure is refused " +
      "(aborted): preview again. Narrow with run_ids and entry_types. Required: query.",
    method: MemoryService.method.forget,
    readOnly: false,
    destructive: true,
    call: (client, request, options) => client.memory.forget(request, options),
  }),
  tool({
    name: "reflect",
    title: "Reflect on a run and store lessons",
    description:
      "Derive lessons from a run and store them. With `lessons` empty, the built-in extractor reads the run's evidence " +
      "(narrow it with checkpoint_id, step_id or last_n_items); with `lessons` given ({content, lesson_type, scope, " +
      "importance, conditions, rationale}), your own lessons are validated and stored instead. Returns every candidate " +
      "lesson with a decision (accepted, merged, rejected or quarantined) and its lesson_id, which record_outcome takes as " +
      "reference_id. Required: run_id.",
    method: LearningService.method.reflect,
    readOnly: false,
    call: (client, request, options) => client.learning.reflect(request, options),
  }),
  tool({
    name: "record_outcome",
    title: "Record a run outcome",
    description:
      "Record how a run or an attempt turned out and reinforce what produced it: name the lesson or entry as reference_id " +
      "(and more in entry_ids), give outcome (`success`, `failure`, `partial`, `neutral`) and/or signal in [-1, 1]. A " +
      "positive outcome raises the lessons' confidence, a negative one lowers it. Pass idempotency_key to apply it at most " +
      "once. Required: run_id.",
    method: LearningService.method.recordOutcome,
    readOnly: false,
    call: (client, request, options) => client.learning.recordOutcome(request, options),
  }),
  tool({
    name: "record_step_outcome",
    title: "Record a step outcome",
    description:
      "Record the reward of one step inside a run (a tool call, a sub-task): outcome (`success`, `failure`, `partial`, " +
      "`neutral`), optional signal in [-1, 1], rationale, and directive_hint (what to do differently next time). " +
      "Recording the same step_id again replaces it; reflect reads step outcomes. Required: run_id, step_id, outcome.",
    method: LearningService.method.recordStepOutcome,
    readOnly: false,
    call: (client, request, options) => client.learning.recordStepOutcome(request, options),
  }),
  tool({
    name: "list_lessons",
    title: "List stored lessons",
    description:
      "List stored lessons, newest first, for one run (run_id) or across all your runs, with their confidence, scope, " +
      "validation status and promotion state. Filter by scope, importance, lesson_type, validation_status, " +
      "promotion_state, min_confidence or exclude_stale; page with limit and page_token (next_page_token).",
    method: LearningService.method.listLessons,
    readOnly: true,
    call: (client, request, options) => client.learning.listLessons(request, options),
  }),
  tool({
    name: "diagnose",
    title: "Diagnose a failure",
    description:
      "Given an error message or a failure description (error_text, optionally error_type), return the stored failure " +
      "lessons and rules that match it, best first, with a short summary of what they advise. Use it when something " +
      "fails, before retrying. Required: error_text; run_id narrows the search to that run plus your wider lessons.",
    method: LearningService.method.diagnose,
    readOnly: true,
    call: (client, request, options) => client.learning.diagnose(request, options),
  }),
  tool({
    name: "handoff",
    title: "Hand a task to another agent",
    description:
      "Hand a task over to another agent of a shared run: stores a pending handoff with a summary (content) and what the " +
      "receiver is asked to do (requested_action: `continue`, `review`, `approve` or `execute`). The receiver sees it in " +
      "context called with its agent_id. Required: run_id, task_id, from_agent_id, to_agent_id, content.",
    method: CoordinationService.method.createHandoff,
    readOnly: false,
    call: (client, request, options) => client.coordination.createHandoff(request, options),
  }),
];

const BY_NAME = new Map(MCP_TOOLS.map((t) => [t.name, t]));

export function toolNamed(name: string): McpTool | undefined {
  return BY_NAME.get(name);
}
