// Runs every probe of every route as one owner and keeps the answers: for each id field, the field holding the probed
// value and every other id field the caller's own record; then the plain call with only the caller's own records.
import type { Json, JsonObject } from "../harness/callers.js";
import { pause } from "../harness/memory.js";
import { kindOf, NOT_OWNER_SCOPED, type Kind } from "./id-kinds.js";
import { callRoute, must, type Answer } from "./route-caller.js";
import { probeRank, requestFor } from "./route-requests.js";
import type { Route } from "./route-catalog.js";
import { jobDone, type Owner } from "./seed.js";

export interface ProbeAnswer {
  /** `CoreService.GetNode id` (a probe), or `CoreService.GetNode` (the plain call); then ` via GET /v2/...`. */
  readonly name: string;
  readonly route: Route;
  /** The probed field's path, "" for the plain call. */
  readonly field: string;
  readonly request: JsonObject;
  /** The probed value, "" for the plain call. */
  readonly probe: string;
  readonly answer: Answer;
}

/** Routes in the order they are probed: those that remove or close what they name come last. */
export function probeOrder(routes: readonly Route[]): Route[] {
  return routes.map((route, i) => ({ route, i })).sort((x, y) => probeRank(x.route) - probeRank(y.route) || x.i - y.i).map(({ route }) => route);
}

const SUBSCRIBE_CORE = "engram.v2.CoreService/SubscribeCoreEvents";
const LIST_SUBSCRIPTIONS = "engram.v2.CoreService/ListCoreSubscriptions";

/** Waits until the caller holds no core subscription but `keep` (a probe's stream closes asynchronously). */
async function subscriptionsSettled(baseUrl: string, owner: Owner): Promise<void> {
  for (let poll = 0; poll < 200; poll++) {
    const list = await must(baseUrl, LIST_SUBSCRIPTIONS, {}, owner.key);
    const ids = (list["subscription_ids"] as Json[] | undefined) ?? [];
    if (ids.every((id) => id === owner.ids.subscription)) return;
    await pause(Math.min(100, 5 * (poll + 1)));
  }
  throw new Error(`${owner.username}'s probe subscriptions are still open after 200 polls`);
}

/** Lets whatever a call started in the background finish, so both twins read the same state next. */
async function settle(baseUrl: string, owner: Owner, route: Route, answer: Answer): Promise<void> {
  const jobId = answer.code === "ok" ? (answer.body as JsonObject | null)?.["job_id"] : undefined;
  if (typeof jobId === "string" && jobId !== "") await jobDone(baseUrl, owner.key, jobId);
  if (route.rpc === SUBSCRIBE_CORE) await subscriptionsSettled(baseUrl, owner);
}

/**
 * Every probe of every route as `owner`, with `values` (another owner's ids, or ghosts) as the probed values. The
 * answers are keyed by probe name, so the same run by a twin with other values lines up with this one.
 */
export async function runMatrix(baseUrl: string, routes: readonly Route[], owner: Owner, values: Readonly<Record<Kind, string>>): Promise<ProbeAnswer[]> {
  const out: ProbeAnswer[] = [];
  const own = (kind: Kind): string => owner.ids[kind];
  for (const route of probeOrder(routes)) {
    const probes = route.name in NOT_OWNER_SCOPED ? [] : route.idFields;
    const calls = [
      ...probes.map((field) => {
        const kind = kindOf(route, field) as Kind;
        return { field: field.path, probe: values[kind], request: requestFor(route, own, { field, value: values[kind] }) };
      }),
      { field: "", probe: "", request: requestFor(route, own) },
    ];
    for (const { field, probe, request } of calls) {
      for (const binding of route.bindings) {
        const answer = await callRoute(baseUrl, route, request, owner.key, binding);
        await settle(baseUrl, owner, route, answer);
        const name = `${route.name}${field === "" ? "" : ` ${field}`} via ${binding.verb} ${binding.template}`;
        out.push({ name, route, field, request, probe, answer });
      }
    }
  }
  return out;
}
