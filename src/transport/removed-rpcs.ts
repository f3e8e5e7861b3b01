// RPCs removed from the API. Their handlers answer `gone` (410 over HTTP, UNIMPLEMENTED over RPC) whatever the
// request, so no transport decodes their bodies: a body today's proto would refuse must not turn 410 into 400.
import type { DescMethod } from "@bufbuild/protobuf";

const REMOVED = new Set(["engram.v2.CoreService/SdmWrite", "engram.v2.CoreService/SdmRead"]);

export function isRemovedRpc(method: DescMethod): boolean {
  return REMOVED.has(`${method.parent.typeName}/${method.name}`);
}
