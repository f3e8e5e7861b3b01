// Services defined in the contract whose logic is not built yet: they answer UNIMPLEMENTED (HTTP 501).
import type { DescService } from "@bufbuild/protobuf";

export const PLANNED_SERVICES: readonly DescService[] = [];
