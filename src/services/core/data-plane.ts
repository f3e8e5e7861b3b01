// The core data-plane route families built on CoreData: nodes, search, scratchpads and transactional sessions.
import type { CoreData } from "../../core/core-data.js";
import type { CoreHandlers } from "./core-service.js";
import { nodeHandlers } from "./nodes.js";
import { scratchpadHandlers } from "./scratchpad.js";
import { searchHandlers } from "./search.js";
import { sessionHandlers } from "./sessions.js";

export function dataPlaneHandlers(core: CoreData): CoreHandlers[] {
  return [nodeHandlers(core), searchHandlers(core), scratchpadHandlers(core), sessionHandlers(core)];
}
