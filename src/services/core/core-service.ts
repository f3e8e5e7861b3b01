// CoreService: the handlers of each core route family merged into one implementation; the removed SDM routes
// answer 410 Gone. Methods no part implements answer UNIMPLEMENTED.
import type { ServiceImpl } from "@connectrpc/connect";
import type { CoreService } from "../../../gen/engram/v2/core_service_pb.js";
import { gone } from "../../platform/errors.js";

export type CoreHandlers = Partial<ServiceImpl<typeof CoreService>>;

export function coreService(parts: readonly CoreHandlers[]): CoreHandlers {
  return Object.assign(
    {},
    ...parts,
    {
      sdmWrite() {
        throw gone("/v2/core/sdm/write", "/v2/core/insert");
      },
      sdmRead() {
        throw gone("/v2/core/sdm/read", "/v2/core/search");
      },
    } satisfies CoreHandlers,
  ) as CoreHandlers;
}
