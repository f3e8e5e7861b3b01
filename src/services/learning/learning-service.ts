// LearningService: the route families of the learning loop, each adapting requests to src/learning.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { EntryChanges } from "../../memory/entry-changes.js";
import type { Storage } from "../../storage/database.js";
import type { EntryStore } from "../../storage/entry-store.js";
import type { LearningChanges } from "../../learning/learning-changes.js";
import type { OutcomeStore } from "../../learning/outcome-store.js";
import type { Outcomes } from "../../learning/outcomes.js";
import type { Reflector } from "../../learning/reflection.js";
import type { RunLinks } from "../../runs/run-links.js";
import { insightHandlers } from "./insights.js";
import { lessonHandlers } from "./lessons.js";
import { listingHandlers } from "./listing.js";
import { outcomeHandlers } from "./outcomes.js";
import { reflectHandlers } from "./reflect.js";

export interface LearningDeps {
  readonly storage: Storage;
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  readonly changes: EntryChanges;
  readonly learning: LearningChanges;
  readonly reflector: Reflector;
  readonly outcomes: Outcomes;
  readonly outcomeStore: OutcomeStore;
  /** Links between the caller's runs: what reflect's `include_linked_runs` adds. */
  readonly runLinks: RunLinks;
}

export function learningService(deps: LearningDeps): ServiceImpl<typeof LearningService> {
  return {
    ...reflectHandlers({ entries: deps.entries, reflector: deps.reflector, runLinks: deps.runLinks }),
    ...lessonHandlers({ storage: deps.storage, entries: deps.entries, changes: deps.changes, learning: deps.learning }),
    ...listingHandlers({ entries: deps.entries, catalog: deps.index.catalog }),
    ...outcomeHandlers(deps.outcomes),
    ...insightHandlers({ entries: deps.entries, index: deps.index, outcomes: deps.outcomeStore }),
  };
}
