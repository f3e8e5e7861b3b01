// What the memory handlers share: stores, the index, the writer, the ingest queue and the answerer.
import type { Logger } from "../../platform/logger.js";
import type { EntryStore } from "../../storage/entry-store.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { EntryWriter } from "../../memory/entry-writer.js";
import type { IngestQueue } from "../../memory/ingest-queue.js";
import type { Answerer } from "./answering.js";
import type { AccessControl } from "../../acl/access-control.js";
import type { AgentRegistry } from "../../coordination/agent-registry.js";
import type { Handoffs } from "../../coordination/handoffs.js";
import type { RunLinks } from "../../runs/run-links.js";
import type { TrustPolicy } from "../../storage/provenance.js";
import type { Forgetting } from "../../memory/forget.js";

export interface MemoryDeps {
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  readonly writer: EntryWriter;
  readonly ingest: IngestQueue;
  readonly answerer: Answerer;
  /** Grants that let a caller read runs of other users. */
  readonly acl: AccessControl;
  readonly logger: Logger;
  /** Whether the direct-bypass query mode is open (SERVICE_CORE_ENABLE_DIRECT_SEARCH). */
  readonly directSearchEnabled: boolean;
  /** Agents registered in runs: the lanes and scopes a named `agent_id` may write and read. */
  readonly agents: AgentRegistry;
  /** Handoffs between agents: GetContext shows an agent the open ones addressed to it. */
  readonly handoffs: Handoffs;
  /** Links between the caller's runs: what `include_linked_runs` adds to a read. */
  readonly runLinks: RunLinks;
  /** The trust each provenance origin gets unless a write states it. */
  readonly trustPolicy: TrustPolicy;
  /** The memory's clock in unix ms: expiry is read against it (tests pass one they control). */
  readonly now: () => number;
  /** Forget by subject: preview, then erasure with a receipt. */
  readonly forgetting: Forgetting;
}
