// The core data plane. The removed SDM routes answer 410 Gone; the rest is built by a later issue.
import type { ServiceImpl } from "@connectrpc/connect";
import { CoreService } from "../../../gen/engram/v2/core_service_pb.js";
import { gone } from "../../platform/errors.js";

export function coreService(): Partial<ServiceImpl<typeof CoreService>> {
  return {
    sdmWrite() {
      throw gone("/v2/core/sdm/write", "/v2/core/insert");
    },
    sdmRead() {
      throw gone("/v2/core/sdm/read", "/v2/core/search");
    },
  };
}
