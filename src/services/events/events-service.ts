// The control event stream: a subscribed event first, then the caller's events as they happen.
import type { ServiceImpl } from "@connectrpc/connect";
import { EventsService } from "../../../gen/engram/v2/events_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import type { EventBus } from "../../events/event-bus.js";
import { CONTROL_EVENT_TYPES } from "../../events/event-types.js";
import { invalidArgument, quoted } from "../../platform/errors.js";

/** Accepts exact types and `prefix.*` patterns (the HTTP gateway has already split lists and JSON arrays). */
function eventTypeFilter(values: readonly string[]): string[] {
  return values
    .map((t) => t.trim())
    .filter((t) => t !== "")
    .map((t) => {
      if (t.endsWith(".*")) {
        const prefix = t.slice(0, -1);
        if (!CONTROL_EVENT_TYPES.some((known) => known.startsWith(prefix))) {
          throw invalidArgument("event_types", `no event type matches ${quoted(t)}`);
        }
        return prefix;
      }
      if (!CONTROL_EVENT_TYPES.includes(t)) throw invalidArgument("event_types", `unknown event type ${quoted(t)}`);
      return t;
    });
}

export function eventsService(bus: EventBus): Partial<ServiceImpl<typeof EventsService>> {
  return {
    async *subscribe(req, ctx) {
      const caller = callerOf(ctx);
      const types = eventTypeFilter(req.eventTypes);
      // Registered before `subscribed` is sent, so no event after it can be missed. Over the caller's cap this
      // throws RESOURCE_EXHAUSTED, before the stream opens (HTTP 429).
      const subscription = bus.open({ owner: isAdmin(caller) ? undefined : caller.userId, runId: req.runId, types }, caller.keyId);
      try {
        yield {
          id: "",
          type: "subscribed",
          runId: req.runId,
          agentId: "",
          payload: JSON.stringify({ run_id: req.runId, event_types: req.eventTypes }),
          createdAt: new Date().toISOString(),
        };
        for await (const event of subscription.events(ctx.signal)) {
          yield {
            id: event.id,
            type: event.type,
            runId: event.runId,
            agentId: event.agentId,
            payload: event.payload,
            createdAt: event.createdAt,
          };
        }
      } finally {
        subscription.close();
      }
    },
  };
}
