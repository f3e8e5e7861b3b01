// The tenant export and import assembled: every record kind of an owner's memory in export order (each after the
// kinds it refers to), the exporter that pages through them and the importer that writes them back.
import type { TrustPolicy } from "../storage/provenance.js";
import type { AccessControl } from "../acl/access-control.js";
import type { ControlSessionStore } from "../control-sessions/control-session-store.js";
import type { CoreData } from "../core/core-data.js";
import type { OutcomeStore } from "../learning/outcome-store.js";
import type { EntryWriter } from "../memory/entry-writer.js";
import type { MemoryIndex } from "../memory/memory-index.js";
import type { Storage } from "../storage/database.js";
import type { EntryStore } from "../storage/entry-store.js";
import type { RetentionStore } from "../storage/retention-store.js";
import type { UserStore } from "../storage/user-store.js";
import { ImportIds } from "./import-ids.js";
import { agentKind, handoffKind } from "./kinds/coordination.js";
import { coreNodeKind, scratchpadKind } from "./kinds/core.js";
import { entryKind } from "./kinds/entries.js";
import { grantKind } from "./kinds/grants.js";
import { outcomeKind, stepOutcomeKind } from "./kinds/outcomes.js";
import { actionKind, conceptKind, cycleKind, goalKind, variableKind } from "./kinds/planning.js";
import { agentDefinitionKind, projectKind, promptHeadKind, promptVersionKind } from "./kinds/projects.js";
import { retentionPolicyKind } from "./kinds/retention.js";
import { controlSessionKind, runLinkKind } from "./kinds/runs.js";
import { skillKind, skillVersionKind } from "./kinds/skills.js";
import type { TenantKind } from "./tenant-kind.js";
import { TenantExporter } from "./tenant-export.js";
import { TenantImporter } from "./tenant-import.js";

export interface TenantTransferDeps {
  readonly storage: Storage;
  readonly users: UserStore;
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  readonly writer: EntryWriter;
  readonly outcomes: OutcomeStore;
  readonly controlSessions: ControlSessionStore;
  readonly core: CoreData;
  readonly acl: AccessControl;
  /** The owners' retention policies: exported, and applied to the memory when imported. */
  readonly retention: RetentionStore;
  /** The trust an entry exported before provenance existed gets as an import (SERVICE_TRUST_POLICY); default policy when not given. */
  readonly trustPolicy?: TrustPolicy;
}

export interface TenantTransfer {
  readonly exporter: TenantExporter;
  readonly importer: TenantImporter;
}

/** Every owner-scoped primary record kind, in the order an export lists them. */
export function tenantKinds(deps: TenantTransferDeps): TenantKind[] {
  const { storage } = deps;
  return [
    projectKind(storage),
    agentDefinitionKind(storage),
    promptVersionKind(storage),
    promptHeadKind(storage),
    skillKind(storage),
    skillVersionKind(storage),
    entryKind(deps),
    outcomeKind({ storage, outcomes: deps.outcomes }),
    stepOutcomeKind({ storage, outcomes: deps.outcomes }),
    agentKind(storage),
    handoffKind(storage),
    runLinkKind(storage),
    controlSessionKind(storage, deps.entries, deps.controlSessions),
    // After the entries and the control sessions that place runs in projects: the policies judge them all once.
    retentionPolicyKind({ storage, retention: deps.retention, index: deps.index }),
    variableKind(storage),
    conceptKind(storage),
    goalKind(storage),
    actionKind(storage),
    cycleKind(storage),
    coreNodeKind(storage, deps.core.embedder),
    scratchpadKind(storage),
    grantKind(storage, deps.users, deps.acl),
  ];
}

export function createTenantTransfer(deps: TenantTransferDeps): TenantTransfer {
  const kinds = tenantKinds(deps);
  return {
    exporter: new TenantExporter(kinds, deps.index.embedder.id),
    importer: new TenantImporter(new ImportIds(deps.storage), kinds, (body) => deps.core.commitWithNodeImport(body)),
  };
}
