// The MCP resources: a run's lessons and its recent activity as JSON documents, listed per run of the caller and
// read through the caller's own client, so a run another user owns reads exactly as one that does not exist.
import type { ListResourcesResult, ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import type { EngramClient } from "../client/engram-client.js";
import { LearningService } from "../../gen/engram/v2/learning_service_pb.js";
import { MemoryService } from "../../gen/engram/v2/memory_service_pb.js";
import { responseJson } from "./tool-json.js";

export type RunResourceKind = "lessons" | "activity";

/** Lessons a resource read returns: one ListLessons page; `list_lessons` pages further. */
export const LESSONS_PER_READ = 100;
/** Entries of recent activity a resource read returns, newest first, in compact projection (content cut to 200). */
export const ACTIVITY_PER_READ = 50;
/** Runs per resources/list page (two resources each), most recently active first. */
export const RUNS_PER_LIST_PAGE = 25;

const MIME_TYPE = "application/json";

export const RESOURCE_TEMPLATES: readonly ResourceTemplate[] = [
  {
    uriTemplate: "engram://runs/{run_id}/lessons",
    name: "run-lessons",
    title: "Lessons of a run",
    description: `The lessons learned in a run (at most ${LESSONS_PER_READ}, newest first) with confidence, scope and promotion state, as ListLessons JSON. Use the list_lessons tool for filters and further pages.`,
    mimeType: MIME_TYPE,
  },
  {
    uriTemplate: "engram://runs/{run_id}/activity",
    name: "run-activity",
    title: "Recent activity of a run",
    description: `The run's ${ACTIVITY_PER_READ} most recent memory entries (facts, lessons, traces, archived blocks…), newest first, content cut to 200 characters, as ListActivity JSON. Fetch an entry's exact content with dereference.`,
    mimeType: MIME_TYPE,
  },
];

const RUN_RESOURCE = /^engram:\/\/runs\/([^/?#]+)\/(lessons|activity)$/;

export function runResourceUri(runId: string, kind: RunResourceKind): string {
  return `engram://runs/${encodeURIComponent(runId)}/${kind}`;
}

/** The run and kind a resource URI names, or undefined when it names no Engram resource. */
export function parseRunResource(uri: string): { readonly runId: string; readonly kind: RunResourceKind } | undefined {
  const match = RUN_RESOURCE.exec(uri);
  if (match === null) return undefined;
  try {
    const runId = decodeURIComponent(match[1] ?? "");
    return runId === "" ? undefined : { runId, kind: match[2] === "lessons" ? "lessons" : "activity" };
  } catch {
    // A malformed percent-escape names no run.
    return undefined;
  }
}

/** One page of the caller's runs, most recently active first, each as its two resources. */
export async function listRunResources(client: EngramClient, cursor: string | undefined, signal: AbortSignal): Promise<ListResourcesResult> {
  const page = await client.runs.listRuns({ limit: RUNS_PER_LIST_PAGE, pageToken: cursor ?? "" }, { signal });
  const resources: Resource[] = page.runs.flatMap((run) => [
    { uri: runResourceUri(run.runId, "lessons"), name: `${run.runId} lessons`, title: `Lessons of run ${run.runId}`, mimeType: MIME_TYPE },
    {
      uri: runResourceUri(run.runId, "activity"),
      name: `${run.runId} activity`,
      title: `Recent activity of run ${run.runId}`,
      description: `${run.entryCount} entries, last activity ${run.lastActivityAt}`,
      mimeType: MIME_TYPE,
    },
  ]);
  return page.nextPageToken === "" ? { resources } : { resources, nextCursor: page.nextPageToken };
}

/** The document behind a resource the URI names (which the caller has parsed). */
export async function readRunResource(
  client: EngramClient,
  uri: string,
  resource: { readonly runId: string; readonly kind: RunResourceKind },
  signal: AbortSignal,
): Promise<ReadResourceResult> {
  const json =
    resource.kind === "lessons"
      ? responseJson(
          LearningService.method.listLessons.output,
          await client.learning.listLessons({ runId: resource.runId, limit: LESSONS_PER_READ }, { signal }),
        )
      : responseJson(
          MemoryService.method.listActivity.output,
          await client.memory.listActivity({ runId: resource.runId, limit: ACTIVITY_PER_READ, sort: "desc", projection: "compact" }, { signal }),
        );
  return { contents: [{ uri, mimeType: MIME_TYPE, text: JSON.stringify(json) }] };
}
