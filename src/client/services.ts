// The Engram services a client talks to, by the name they have on the client: adding a service is one line.
import type { DescService } from "@bufbuild/protobuf";
import { AuthService } from "../../gen/engram/v2/auth_service_pb.js";
import { CoordinationService } from "../../gen/engram/v2/coordination_service_pb.js";
import { CoreService } from "../../gen/engram/v2/core_service_pb.js";
import { EventsService } from "../../gen/engram/v2/events_service_pb.js";
import { HealthService } from "../../gen/engram/v2/health_service_pb.js";
import { LearningService } from "../../gen/engram/v2/learning_service_pb.js";
import { MemoryService } from "../../gen/engram/v2/memory_service_pb.js";
import { PlanningService } from "../../gen/engram/v2/planning_service_pb.js";
import { ResourcesService } from "../../gen/engram/v2/resources_service_pb.js";
import { RunsService } from "../../gen/engram/v2/runs_service_pb.js";
import { SessionsService } from "../../gen/engram/v2/sessions_service_pb.js";
import { TenantService } from "../../gen/engram/v2/tenant_service_pb.js";
import { AdminService } from "../../gen/engram/v2/admin_service_pb.js";

export const ENGRAM_SERVICES = {
  health: HealthService,
  auth: AuthService,
  memory: MemoryService,
  core: CoreService,
  learning: LearningService,
  coordination: CoordinationService,
  planning: PlanningService,
  runs: RunsService,
  sessions: SessionsService,
  resources: ResourcesService,
  events: EventsService,
  tenant: TenantService,
  admin: AdminService,
} satisfies Record<string, DescService>;

export type EngramServices = typeof ENGRAM_SERVICES;
export type EngramServiceName = keyof EngramServices;
