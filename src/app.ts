// Wiring only: config → logger/metrics → storage → retrieval → services → one-port server.
import path from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { createLogger, type Logger } from "./platform/logger.js";
import { createMetrics, type Metrics } from "./platform/metrics.js";
import { Readiness } from "./platform/readiness.js";
import { openStorage, type ReplayedWrite } from "./storage/database.js";
import { ClusterNode } from "./cluster/cluster-node.js";
import { clusterInterceptor, globalTokenInterceptor } from "./transport/interceptors/cluster.js";
import type { WriteFaults } from "./storage/write-faults.js";
import { BackgroundGate } from "./platform/background-gate.js";
import { UserStore } from "./storage/user-store.js";
import { EntryStore } from "./storage/entry-store.js";
import type { Embedder } from "./retrieval/embedder.js";
import { WordVectorEmbedder } from "./retrieval/embedders/word-vector-embedder.js";
import { OpenAiEmbedder } from "./retrieval/embedders/openai-embedder.js";
import { ChatClient } from "./retrieval/llm/chat-client.js";
import { MemoryIndex } from "./memory/memory-index.js";
import { EntryWriter } from "./memory/entry-writer.js";
import { IngestQueue } from "./memory/ingest-queue.js";
import { Answerer } from "./services/memory/answering.js";
import type { Config } from "./platform/config.js";
import { Authenticator } from "./auth/authenticator.js";
import { HashedEmbedder } from "./retrieval/embedders/hashed-embedder.js";
import { authInterceptor } from "./transport/interceptors/auth.js";
import { costInterceptor } from "./transport/interceptors/cost.js";
import { callRecorder, observeInterceptor } from "./transport/interceptors/observe.js";
import { CallAdmission, type Admitting } from "./transport/call-admission.js";
import { readinessInterceptor } from "./transport/interceptors/readiness.js";
import { policyInterceptor } from "./transport/interceptors/policy.js";
import { rateLimitInterceptor } from "./transport/interceptors/rate-limit.js";
import { TokenBuckets } from "./platform/token-buckets.js";
import { createRouter, requestListener, type Mount } from "./transport/rpc-router.js";
import { mcpMount } from "./mcp/http-mount.js";
import { openApiMount } from "./openapi/openapi-mount.js";
import { HttpGateway } from "./transport/gateway/gateway.js";
import { listenOnePort } from "./transport/one-port-server.js";
import { healthService } from "./services/health/health-service.js";
import { authService } from "./services/auth/auth-service.js";
import { memoryService } from "./services/memory/memory-service.js";
import { serverReflectionService } from "./services/server-reflection/server-reflection-service.js";
import { eventsService } from "./services/events/events-service.js";
import { coreService, type CoreHandlers } from "./services/core/core-service.js";
import { aclHandlers } from "./services/core/acl.js";
import { pubsubHandlers } from "./services/core/pubsub.js";
import { storageHandlers, vectorIndexStats } from "./services/core/storage.js";
import { Compactor } from "./storage/compaction.js";
import { SubscriptionRegistry } from "./core/subscriptions.js";
import { CoreEventBus } from "./core/core-events.js";
import { CoreData } from "./core/core-data.js";
import { dataPlaneHandlers } from "./services/core/data-plane.js";
import { AccessControl } from "./acl/access-control.js";
import { EventBus } from "./events/event-bus.js";
import { HealthService } from "../gen/engram/v2/health_service_pb.js";
import { AuthService } from "../gen/engram/v2/auth_service_pb.js";
import { MemoryService } from "../gen/engram/v2/memory_service_pb.js";
import { EventsService } from "../gen/engram/v2/events_service_pb.js";
import { CoreService } from "../gen/engram/v2/core_service_pb.js";
import { RunsService } from "../gen/engram/v2/runs_service_pb.js";
import { runsService } from "./services/runs/runs-service.js";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.js";
import { PLANNED_SERVICES } from "./services/planned.js";
import { CoordinationService } from "../gen/engram/v2/coordination_service_pb.js";
import { coordinationService } from "./services/coordination/coordination-service.js";
import { AgentRegistry } from "./coordination/agent-registry.js";
import { Handoffs } from "./coordination/handoffs.js";
import { LivenessWatch } from "./coordination/liveness-watch.js";
import { LearningService } from "../gen/engram/v2/learning_service_pb.js";
import { learningService } from "./services/learning/learning-service.js";
import { LearningChanges } from "./learning/learning-changes.js";
import { OutcomeStore } from "./learning/outcome-store.js";
import { Outcomes } from "./learning/outcomes.js";
import { Reflector } from "./learning/reflection.js";
import { BuiltinExtractor } from "./learning/extraction/builtin-extractor.js";
import { LlmExtractor } from "./learning/extraction/llm-extractor.js";
import { EntryChanges } from "./memory/entry-changes.js";
import { RunDeletion, type RunPlanePurge } from "./memory/run-deletion.js";
import { RunDirectory } from "./runs/run-directory.js";
import { RunLinks } from "./runs/run-links.js";
import { PlanningService } from "../gen/engram/v2/planning_service_pb.js";
import { Planning, deletePlanningOfRun, goalsOfRun, variablesOfRun } from "./planning/planning.js";
import { planningService } from "./services/planning/planning-service.js";
import { SessionsService } from "../gen/engram/v2/sessions_service_pb.js";
import { sessionsService } from "./services/sessions/sessions-service.js";
import { closedSessionGuard } from "./services/sessions/closed-session-guard.js";
import { ControlSessionStore } from "./control-sessions/control-session-store.js";
import { ControlSessions } from "./control-sessions/control-sessions.js";
import { ResourcesService } from "../gen/engram/v2/resources_service_pb.js";
import { resourcesService } from "./services/resources/resources-service.js";
import { Prompts } from "./resources/prompts.js";
import { AgentDefinitions } from "./resources/agent-definitions.js";
import { Projects, type ProjectPlane } from "./resources/projects.js";
import { Skills, skillsProjectPlane } from "./resources/skills-store.js";
import { Optimizer } from "./resources/optimizer.js";
import { RunHistory } from "./resources/run-history.js";
import { TenantService } from "../gen/engram/v2/tenant_service_pb.js";
import { AdminService } from "../gen/engram/v2/admin_service_pb.js";
import { adminService } from "./services/admin/admin-service.js";
import { tenantService } from "./services/tenant/tenant-service.js";
import { createTenantTransfer } from "./tenant/tenant-transfer.js";
import { Consolidator } from "./memory/consolidation.js";
import { Forgetting } from "./memory/forget.js";
import { startConsole, type ConsoleServer } from "./console/console-server.js";
import { RetentionStore } from "./storage/retention-store.js";
import { EntryExpiry } from "./storage/entry-expiry.js";
import { ExpiryPurge } from "./memory/expiry-purge.js";
import { RetentionPolicies } from "./memory/retention-policies.js";

export interface Engram {
  readonly port: number;
  /** The web console's port; 0 when SERVICE_CONSOLE_PORT=0 disables it. */
  readonly consolePort: number;
  /** Test-only hooks: inject a write failure, digest the store, wait for background purges. */
  readonly testHooks: {
    readonly writeFaults: WriteFaults;
    fingerprint(): Record<string, string>;
    /** Holds ingest jobs and run purges at their next step until the returned function is called. */
    holdBackground(): () => void;
    /** Resolves once no ingest job, no run purge, no expiry sweep and no consolidation pass is pending. */
    backgroundIdle(): Promise<void>;
    /** Purges the entries expired by the memory's clock now; resolves with how many it removed. */
    expirySweep(): Promise<number>;
  };
  readonly readiness: Readiness;
  readonly metrics: Metrics;
  readonly logger: Logger;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly logger?: Logger;
  /** The console's clock (session expiry, metric samples); tests pass a fake one instead of waiting. */
  readonly now?: () => number;
  /** The rate limiter's clock in ms (default: monotonic `performance.now`); tests pass a fake one instead of waiting. */
  readonly rateLimitNow?: () => number;
  /** The memory's clock in unix ms (entry expiry, retention); tests pass a fake one instead of waiting. */
  readonly memoryNow?: () => number;
}

export async function startEngram(config: Config, options: StartOptions = {}): Promise<Engram> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const metrics = createMetrics();
  const readiness = new Readiness();
  // A clustered node with an empty store starts from its shards' snapshot, when the cluster has one.
  if (config.cluster !== undefined) await ClusterNode.bootstrap(config.cluster, path.join(config.dataDir, "lmdb"), logger);
  const storage = openStorage(config.dataDir, { maxStoreBytes: config.maxStoreBytes });
  // Clustered: the store catches up on the log before anything reads it; the indexes hear other nodes' writes once
  // they are loaded (`follow` below).
  let onReplayed: (writes: readonly ReplayedWrite[]) => void = () => undefined;
  const cluster = config.cluster === undefined ? undefined : await ClusterNode.join(config.cluster, storage, logger, (writes) => onReplayed(writes));
  const users = new UserStore(storage);
  const entries = new EntryStore(storage, config.trustPolicy);
  // The memory's one clock and its retention policies: every lookup and every candidate judges expiry by them.
  const memoryNow = options.memoryNow ?? Date.now;
  const retention = new RetentionStore(storage);
  entries.useExpiry(new EntryExpiry(memoryNow, retention));
  const controlSessionStore = new ControlSessionStore(storage, entries);
  retention.useProjectOfRun((owner, runId) => controlSessionStore.get(owner, runId)?.projectId ?? "");
  const authenticator = new Authenticator(users, config.instanceTag, config.adminKey);
  await authenticator.bootstrap(config.dataDir, logger);

  const subscriptionLimits = { perKey: config.maxSubscriptionsPerKey, total: config.maxSubscriptions };
  const events = new EventBus(subscriptionLimits);
  await cluster?.relayEvents(events);
  const embedder = await createEmbedder(config);
  const index = new MemoryIndex(storage, entries, embedder, logger);
  // Observes the catalog from before it loads, so its run summaries are rebuilt with it at start-up.
  const runDirectory = new RunDirectory(index.catalog);
  const runLinks = new RunLinks(storage, events);
  const writer = new EntryWriter(entries, index, events, metrics);
  const consolidator = new Consolidator(storage, entries, index, events, logger, config.consolidation);
  writer.consolidateWith(consolidator);
  const background = new BackgroundGate();
  // Clustered, a node works the jobs and purges of the shards it serves; its store may hold others (a larger snapshot).
  const worksFor = (owner: number): boolean => cluster?.servesOwner(owner) ?? true;
  const ingest = new IngestQueue(storage, entries, writer, events, metrics, logger, background, worksFor);
  const llm = config.llm === undefined ? undefined : new ChatClient({ ...config.llm, metrics, logger });

  // Per-key rate limits act right after authentication, before any other work is spent on the call.
  // The transport charges the calls it receives before reading their bodies (CallAdmission); the interceptor reports
  // that charge, and charges calls dispatched in-process.
  const limits =
    config.rateLimit === undefined ? undefined : { buckets: new TokenBuckets(config.rateLimit, options.rateLimitNow ?? (() => performance.now())), limitAdmin: config.rateLimit.limitAdmin };
  const rateLimit = limits === undefined ? [] : [rateLimitInterceptor(limits.buckets, limits.limitAdmin)];
  const record = callRecorder(logger, metrics);
  const router = createRouter([observeInterceptor(record), readinessInterceptor(readiness), globalTokenInterceptor(cluster), authInterceptor(authenticator), ...rateLimit, costInterceptor(metrics), clusterInterceptor(cluster), policyInterceptor(config), closedSessionGuard(controlSessionStore)], config.maxRequestBytes);
  router.service(HealthService, healthService(readiness, metrics));
  router.service(AuthService, authService(users, config.instanceTag));
  const acl = new AccessControl(storage);
  const agentRegistry = new AgentRegistry(storage, events);
  const livenessWatch = new LivenessWatch(
    events,
    { idleAfterMs: config.agentIdleAfterMs, goneAfterMs: config.agentGoneAfterMs },
    (owner, runId, agentId) => agentRegistry.get(owner, runId, agentId) !== undefined,
    Date.now,
    (owner) => cluster?.announcesFor(owner) ?? true,
  );
  livenessWatch.load(storage);
  agentRegistry.watchWith(livenessWatch);
  const handoffs = new Handoffs(storage, events);
  const changes = new EntryChanges(storage, entries, index, events);
  const memoryDeps = {
    agents: agentRegistry,
    handoffs,
    entries,
    index,
    writer,
    ingest,
    answerer: new Answerer(llm, logger),
    acl,
    logger,
    directSearchEnabled: config.coreEnableDirectSearch,
    runLinks,
    trustPolicy: config.trustPolicy,
    now: memoryNow,
    forgetting: new Forgetting(entries, index, changes, events, memoryNow),
  };
  router.service(MemoryService, memoryService(memoryDeps, events));
  router.service(CoordinationService, coordinationService({ agents: agentRegistry, handoffs, liveness: { idleAfterMs: config.agentIdleAfterMs, goneAfterMs: config.agentGoneAfterMs } }));
  const learning = new LearningChanges(entries, index, events);
  const outcomeStore = new OutcomeStore(storage);
  // Every plane's records of a run go in delete_run's one transaction.
  const runPlanes: RunPlanePurge[] = [
    (owner, runId) => ({ links: runLinks.forgetRunInTransaction(owner, runId) }),
    (owner, runId) => ({ agents: agentRegistry.deleteRunInTransaction(owner, runId), handoffs: handoffs.deleteRunInTransaction(owner, runId) }),
    (owner, runId) => ({ control_sessions: controlSessionStore.removeInTransaction(owner, runId) ? 1 : 0 }),
    (owner, runId) => ({ ...deletePlanningOfRun(storage, owner, runId) }),
    (owner, runId) => ({ retention_policies: retention.removeInTransaction(owner, "run", runId) ? 1 : 0 }),
  ];
  const planning = new Planning({ storage, entries, writer, events, trustPolicy: config.trustPolicy });
  const coreEvents = new CoreEventBus();
  const subscriptions = new SubscriptionRegistry(coreEvents, acl, subscriptionLimits);
  const compactor = new Compactor(storage, logger);
  const core = new CoreData({ storage, dataDir: config.dataDir, embedder, bus: coreEvents, acl, logger });
  // The core data plane provides the deletion's transaction: its nodes of the run go with everything else.
  const runDeletion = new RunDeletion(storage, entries, index, ingest, events, logger, background, outcomeStore, runPlanes, (body) =>
    core.commitWithRunPurge((purgeRunNodes) => body((owner, runId) => ({ core_nodes: purgeRunNodes(owner, runId) }))),
    worksFor,
    // The run's retention policy went with it: the in-memory mirror follows (its entries are hidden by the tombstone).
    (owner, runId) => retention.applied(owner, "run", runId),
  );
  const expiryPurge = new ExpiryPurge({ entries, index, changes, logger, gate: background, worksFor, periodMs: config.retentionSweepMs });
  const retentionPolicies = new RetentionPolicies(storage, retention, index, memoryNow);
  const builtinExtractor = new BuiltinExtractor();
  const reflector = new Reflector({
    storage,
    entries,
    outcomes: outcomeStore,
    index,
    writer,
    changes: learning,
    events,
    extractor: llm === undefined ? builtinExtractor : new LlmExtractor(llm, builtinExtractor, { timeoutMs: config.llm?.timeoutMs ?? 10_000 }),
  });
  const outcomes = new Outcomes({ storage, entries, catalog: index.catalog, store: outcomeStore, changes: learning, events, index });
  router.service(
    SessionsService,
    sessionsService(
      new ControlSessions({
        storage,
        entries,
        store: controlSessionStore,
        writer,
        reflector,
        events,
        trustPolicy: config.trustPolicy,
        projectLinked: (owner) => retentionPolicies.runProjectChanged(owner),
      }),
    ),
  );
  router.service(LearningService, learningService({ storage, entries, index, changes, learning, reflector, outcomes, outcomeStore, runLinks }));
  router.service(EventsService, eventsService(events));
  router.service(RunsService, runsService({ memory: memoryDeps, deletion: runDeletion, directory: runDirectory, links: runLinks, sessionPhase: (owner, runId) => controlSessionStore.phaseOf(owner, runId),
    retention: retentionPolicies, projectExists: (owner, projectId) => projects.exists(owner, projectId),
    planOf: (owner, runId) => ({ goals: goalsOfRun(planning, owner, runId), variables: variablesOfRun(planning, owner, runId) }),
  }));
  // One entry per core route family; each is a Partial<ServiceImpl<typeof CoreService>>.
  const coreParts: CoreHandlers[] = [aclHandlers(acl, users, (caller, id) => core.locateNode(caller, id)),
    pubsubHandlers({ registry: subscriptions, embedder, locateNode: (caller, id) => core.locateNode(caller, id) }), storageHandlers({ storage, compactor, index, moreIndexes: () => [vectorIndexStats("node_vector", core.index.dense)] })];
  coreParts.push(...dataPlaneHandlers(core));
  router.service(CoreService, coreService(coreParts));
  router.service(PlanningService, planningService(planning));
  const prompts = new Prompts(storage, events);
  const agentDefinitions = new AgentDefinitions(storage, events, prompts);
  // Every plane of a project's resources besides agent definitions goes in the project's deleting transaction.
  const projectPlanes: ProjectPlane[] = [skillsProjectPlane(storage)];
  agentDefinitions.usePlanes(projectPlanes);
  const projects = new Projects(storage, events, agentDefinitions, projectPlanes);
  const skills = new Skills(storage, events, { projectExists: (owner, projectId) => projects.exists(owner, projectId), agentExists: (owner, projectId, agentId) => agentDefinitions.exists(owner, projectId, agentId) });
  const optimizer = new Optimizer({ entries, catalog: index.catalog, outcomes: outcomeStore, prompts, skills, agents: agentDefinitions, llm, defaultTimeoutMs: config.llm?.timeoutMs ?? 30_000 });
  const runHistory = new RunHistory({ storage, catalog: index.catalog, directory: runDirectory, outcomes: outcomeStore, sessions: controlSessionStore });
  router.service(ResourcesService, resourcesService({ projects, agents: agentDefinitions, prompts, skills, optimizer, runHistory }));
  router.service(TenantService, tenantService(createTenantTransfer({ storage, users, entries, index, writer, outcomes: outcomeStore, controlSessions: controlSessionStore, core, acl, retention, trustPolicy: config.trustPolicy })));
  router.service(AdminService, adminService({ storage, dataDir: config.dataDir }));
  // Routes whose logic a later issue builds: registered without an implementation, so they answer
  // UNIMPLEMENTED (HTTP 501) naming the method, never 404.
  for (const service of PLANNED_SERVICES) router.service(service, {});
  const served: DescService[] = [HealthService, AuthService, MemoryService, EventsService, CoreService, RunsService, LearningService, SessionsService, PlanningService, CoordinationService, ResourcesService, TenantService, AdminService, ...PLANNED_SERVICES];
  router.service(ServerReflection, serverReflectionService(served));

  const admitting: Admitting | undefined = limits === undefined ? undefined : { admission: new CallAdmission(authenticator, limits.buckets, limits.limitAdmin), record };
  const gateway = new HttpGateway(router.handlers, config.maxRequestBytes, logger, admitting);
  const mounts: Mount[] = [mcpMount({ authenticator, maxRequestBytes: config.maxRequestBytes, logger }), openApiMount(served, logger)];
  const server = await listenOnePort(requestListener(router, gateway, logger, mounts, admitting), config.port, config.host, config);
  logger.info({ port: server.port, data_dir: config.dataDir, instance_tag: config.instanceTag }, "engram listening");
  // Start-up work runs while /readyz answers 503 with its reason, in the spec's order; /livez answers throughout.
  let consoleServer: ConsoleServer | undefined;
  try {
    if (config.consolePort !== 0) {
      consoleServer = await startConsole({ config, authenticator, readiness, metrics, logger, dataPlanePort: server.port, now: options.now ?? Date.now });
    }
    await index.load();
    await core.load();
    readiness.enter("acl_rebuild_in_progress");
    logger.info({ grants: acl.rebuild() }, "access grants loaded");
    await index.prewarmSparse(readiness);
  } catch (e: unknown) {
    // A store this build cannot read (a record of another schema version, a corrupt record), or a console port in use,
    // stops start-up; release the ports and the environment so that the caller can report it and exit cleanly.
    await consoleServer?.close();
    await server.close();
    index.close();
    core.close();
    await cluster?.close();
    await storage.close();
    throw e;
  }
  if (cluster !== undefined) {
    // Everything derived in memory from the store follows the writes other nodes made, as it follows this node's; one
    // that fails is logged, and neither keeps the others from hearing the writes nor stops the shard's replay.
    const followers = { memory: index, acl, core, liveness: livenessWatch };
    onReplayed = (writes) => {
      for (const [name, follower] of Object.entries(followers)) {
        try {
          follower.replayed(writes);
        } catch (e: unknown) {
          logger.error({ err: e, follower: name }, "replayed writes not applied in memory");
        }
      }
    };
    cluster.follow();
    // A node of a shared shard that left may have left jobs and purges queued (replicated here): take them up.
    cluster.whenPeerLeaves(() => {
      ingest.start();
      runDeletion.start();
    });
  }
  readiness.markReady();
  ingest.start();
  runDeletion.start();
  expiryPurge.start();
  livenessWatch.start();
  if (config.consolidationSweep) consolidator.sweep(background, worksFor);

  return {
    port: server.port,
    consolePort: consoleServer?.port ?? 0,
    testHooks: {
      writeFaults: storage.faults,
      fingerprint: () => storage.fingerprint(),
      holdBackground: () => background.hold(),
      backgroundIdle: async () => {
        await ingest.idle();
        await runDeletion.idle();
        await expiryPurge.idle();
        await consolidator.idle();
      },
      expirySweep: () => expiryPurge.sweep(),
    },
    readiness,
    metrics,
    logger,
    async close() {
      // /readyz turns 503 `shutting_down`; the port drains (one-port-server.ts) while every event stream gets its
      // final `server.shutdown` event and ends; background work then stops at its next safe point.
      readiness.shutDown();
      await server.close({ graceMs: config.shutdownGraceMs, onDraining: () => {
        events.shutdown();
        subscriptions.shutdown();
      } });
      await consoleServer?.close();
      await ingest.stop();
      livenessWatch.stop();
      await runDeletion.stop();
      await expiryPurge.stop();
      await consolidator.stop();
      await cluster?.close();
      index.saveSparseSnapshot();
      index.close();
      core.close();
      await storage.close();
    },
  };

}

async function createEmbedder(config: Config): Promise<Embedder> {
  if (config.embeddings !== undefined) {
    const embedder = new OpenAiEmbedder({ ...config.embeddings, timeoutMs: config.embeddings.timeoutMs });
    // The dimension of a remote model is learnt once, before any vector is stored or searched.
    await embedder.probe();
    return embedder;
  }
  return config.embedder === "hashed" ? new HashedEmbedder() : WordVectorEmbedder.load();
}
