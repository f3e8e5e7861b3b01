// Resource records as API messages, and the page tokens of the resource listings.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentDefinitionSchema, ProjectDefinitionSchema, PromptVersionSchema } from "../../../gen/engram/v2/resources_service_pb.js";
import { invalidArgument } from "../../platform/errors.js";
import { cursorSeq, decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import type { AgentDefinitionView } from "../../resources/agent-definitions.js";
import type { ProjectView } from "../../resources/projects.js";
import type { PromptVersionRecord } from "../../resources/resource-records.js";
import { iso } from "../iso-time.js";


export function projectMessage(view: ProjectView): MessageInitShape<typeof ProjectDefinitionSchema> {
  const r = view.record;
  return { projectId: view.projectId, name: r.name, description: r.description, agentIds: [...view.agentIds], createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) };
}

export function agentMessage(view: AgentDefinitionView): MessageInitShape<typeof AgentDefinitionSchema> {
  const r = view.record;
  return {
    agentId: r.agentId,
    projectId: r.projectId,
    role: r.role,
    description: r.description,
    systemPromptContent: view.activePrompt?.content ?? "",
    activePromptVersionId: view.activePrompt?.versionId ?? "",
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  };
}

export function promptMessage(v: PromptVersionRecord): MessageInitShape<typeof PromptVersionSchema> {
  return {
    versionId: v.versionId,
    agentId: v.agentId,
    projectId: v.projectId,
    content: v.content,
    status: v.status,
    versionNumber: v.number,
    source: v.source,
    parentVersionId: v.parentVersionId,
    createdAt: iso(v.createdAt),
    activatedAt: iso(v.activatedAt),
    optimizationSummary: v.optimizationSummary,
    avgOutcomeScore: 0,
    outcomeCount: 0,
  };
}

/** A token continuing a newest-first listing below `below`, bound to the listing it came from. */
export function encodeBelowToken(listing: string, below: number | undefined): string {
  return below === undefined ? "" : encodeCursor({ b: below, f: filtersDigest(listing) });
}

export function decodeBelowToken(listing: string, token: string): number | undefined {
  if (token === "") return undefined;
  const cursor = decodeCursor(token);
  if (cursor["f"] !== filtersDigest(listing)) throw invalidArgument("page_token", "belongs to another listing; pass a next_page_token unchanged");
  return cursorSeq(cursor["b"]);
}
