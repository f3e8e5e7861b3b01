// Services defined in the contract whose logic is not built yet: registered without an implementation, so every
// method answers UNIMPLEMENTED (HTTP 501) naming itself, never 404. Every service is built today; the list stays as
// the place for the next one.
import type { DescService } from "@bufbuild/protobuf";

export const PLANNED_SERVICES: readonly DescService[] = [];
