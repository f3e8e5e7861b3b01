// Services defined in the contract whose logic is not built yet (LearningService is partly built: its unbuilt
// methods answer UNIMPLEMENTED the same way). They are registered without an implementation,
// so every method answers UNIMPLEMENTED (HTTP 501) naming itself, never 404.
import type { DescService } from "@bufbuild/protobuf";
import { ResourcesService } from "../../gen/engram/v2/resources_service_pb.js";

export const PLANNED_SERVICES: readonly DescService[] = [
  ResourcesService,
];
