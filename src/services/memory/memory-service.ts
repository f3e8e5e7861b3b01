// MemoryService: the handlers of each route family, over one set of shared dependencies.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import type { EventBus } from "../../events/event-bus.js";
import type { MemoryDeps } from "./deps.js";
import { rememberRecallHandlers } from "./remember-recall.js";
import { queryHandlers } from "./query.js";
import { ingestHandlers } from "./ingest.js";
import { contextHandlers } from "./context.js";
import { archiveHandlers } from "./archive.js";
import { memoryHealthHandlers } from "./memory-health.js";
import { activityHandlers } from "./activity.js";
import { forgetHandlers } from "./forget.js";

export function memoryService(deps: MemoryDeps, events: EventBus): ServiceImpl<typeof MemoryService> {
  return {
    ...rememberRecallHandlers(deps),
    ...queryHandlers(deps),
    ...ingestHandlers(deps),
    ...contextHandlers(deps),
    ...archiveHandlers(deps),
    ...memoryHealthHandlers(deps),
    ...forgetHandlers(deps),
    ...activityHandlers({
      entries: deps.entries,
      events,
      acl: deps.acl,
      agents: deps.agents,
      trustPolicy: deps.trustPolicy,
      write: async (entry) => {
        const [written] = await deps.writer.write([{ entry }], "activity");
        if (written === undefined) throw new Error("write returned no entry");
        return written.record;
      },
    }),
  };
}
