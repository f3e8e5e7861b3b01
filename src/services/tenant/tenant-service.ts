// TenantService: the caller's export pages and import batches, adapted to src/tenant.
import type { ServiceImpl } from "@connectrpc/connect";
import type { TenantService } from "../../../gen/engram/v2/tenant_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { DEFAULT_EXPORT_LIMIT, MAX_EXPORT_LIMIT } from "../../tenant/tenant-export.js";
import type { TenantTransfer } from "../../tenant/tenant-transfer.js";

export function tenantService({ exporter, importer }: TenantTransfer): ServiceImpl<typeof TenantService> {
  return {
    exportTenant(req, ctx) {
      const limit = req.limit === 0 ? DEFAULT_EXPORT_LIMIT : Math.min(req.limit, MAX_EXPORT_LIMIT);
      return exporter.page(callerOf(ctx).userId, req.pageToken, limit);
    },

    async importTenant(req, ctx) {
      return importer.import(callerOf(ctx).userId, req.lines, callerOf(ctx).keyId);
    },
  };
}
