// Pubsub routes: subscribe (a server stream, SSE over HTTP) to core events the caller may read, list the
// caller's subscriptions, and end one by id.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { SubscribeCoreEventsRequest, SubscribeCoreEventsResponseSchema } from "../../../gen/engram/v2/core_service_pb.js";
import { callerOf, isAdmin, type Principal } from "../../auth/principal.js";
import type { CoreFilter, CoreFilterType, Delivery, SubscriptionRegistry } from "../../core/subscriptions.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import type { Embedder } from "../../retrieval/embedder.js";
import { bounded, content, required } from "../memory/validate.js";
import type { CoreHandlers } from "./core-service.js";

export const DEFAULT_SEMANTIC_THRESHOLD = 0.8;

/** Where a live node sits, for checking that the caller may watch it. */
export interface NodeLocation {
  readonly owner: number;
  readonly runId: string;
  readonly lane: string;
}

export interface PubsubDeps {
  readonly registry: SubscriptionRegistry;
  readonly embedder: Embedder;
  /** The owner, run and lane of a node the caller may read; undefined alike when there is none and when it is out of reach. */
  readonly locateNode: (caller: Principal, nodeId: bigint) => NodeLocation | undefined;
}

type EventMessage = MessageInitShape<typeof SubscribeCoreEventsResponseSchema>;

type FilterParser = (deps: PubsubDeps, req: SubscribeCoreEventsRequest, ctx: HandlerContext) => CoreFilter | Promise<CoreFilter>;

/** How each filter type is read from a request: its keys are the one list of filter types the API accepts. */
const FILTER_PARSERS: { readonly [K in CoreFilterType]: FilterParser } = {
  all: () => ({ kind: "all" }),
  node: (deps, req, ctx) => {
    if (req.nodeId === 0n) throw invalidArgument("node_id", "is required when filter_type is node");
    // The lookup is scoped: another user's node answers as if it did not exist, unless the caller may read it.
    if (deps.locateNode(callerOf(ctx), req.nodeId) === undefined) throw notFound(`node ${req.nodeId}`);
    return { kind: "node", nodeId: req.nodeId };
  },
  semantic: async (deps, req) => {
    const text = content("query_text", req.queryText);
    const threshold = req.threshold ?? DEFAULT_SEMANTIC_THRESHOLD;
    if (Number.isNaN(threshold)) throw invalidArgument("threshold", "must be a number");
    const [vector] = await deps.embedder.embed([text]);
    if (vector === undefined) throw new Error("embedder returned no vector");
    return { kind: "semantic", vector, threshold: Math.min(1, Math.max(0, threshold)) };
  },
  session: (_deps, req) => ({ kind: "session", sessionId: required("session_id", req.sessionId) }),
};

export const FILTER_TYPES = Object.keys(FILTER_PARSERS) as readonly CoreFilterType[];

function isFilterType(type: string): type is CoreFilterType {
  return (FILTER_TYPES as readonly string[]).includes(type);
}

/** Validates the request into a filter; every problem is INVALID_ARGUMENT (or NOT_FOUND) before the stream opens. */
async function filterOf(deps: PubsubDeps, req: SubscribeCoreEventsRequest, ctx: HandlerContext): Promise<CoreFilter> {
  const type = req.filterType.trim().toLowerCase();
  if (type === "") throw invalidArgument("filter_type", `is required: one of ${FILTER_TYPES.join(", ")}`);
  if (!isFilterType(type)) throw invalidArgument("filter_type", `must be one of ${FILTER_TYPES.join(", ")}; got ${quoted(req.filterType)}`);
  return FILTER_PARSERS[type](deps, req, ctx);
}

/** The event as the spec shapes it: only the fields of its type are set. */
function messageOf({ event, similarity }: Delivery): EventMessage {
  switch (event.type) {
    case "node.inserted":
    case "node.updated":
      return {
        type: event.type,
        nodeId: event.nodeId,
        runId: event.runId,
        metadataJson: event.metadataJson,
        createdAt: event.createdAt,
        updatedAt: event.updatedAt,
        similarity,
      };
    case "node.deleted":
      return { type: event.type, nodeId: event.nodeId };
    case "memory.added":
      return { type: event.type, sessionId: event.sessionId, entryJson: event.entryJson };
    case "server.shutdown":
      return { type: event.type };
  }
}

export function pubsubHandlers(deps: PubsubDeps): CoreHandlers {
  return {
    async *subscribeCoreEvents(req, ctx) {
      const caller = callerOf(ctx);
      const runId = bounded("run_id", req.runId);
      const filter = await filterOf(deps, req, ctx);
      // Registered before `subscribed` is sent, so no event committed after the client sees its id is missed. Over
      // the caller's cap this throws RESOURCE_EXHAUSTED, before the stream opens (HTTP 429).
      const subscription = deps.registry.open(caller, filter, runId);
      try {
        yield { type: "subscribed", subscriptionId: subscription.id };
        for await (const delivery of subscription.deliveries(ctx.signal)) yield messageOf(delivery);
      } finally {
        subscription.close();
      }
    },

    async unsubscribeCoreEvents(req, ctx) {
      const id = required("subscription_id", req.subscriptionId);
      if (!deps.registry.close(callerOf(ctx).userId, id)) throw notFound(`subscription "${id}"`);
      return { success: true };
    },

    async listCoreSubscriptions(_req, ctx) {
      const caller = callerOf(ctx);
      const ids = deps.registry.idsOf(caller.userId);
      // The server-wide count moves with other users' subscriptions: only an admin may see it.
      return { subscriptionIds: ids, total: isAdmin(caller) ? deps.registry.total : ids.length };
    },
  };
}
