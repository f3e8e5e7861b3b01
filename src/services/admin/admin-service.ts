// AdminService: server operations for admins only — the online backup, adapted to src/storage/backup.ts.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AdminService } from "../../../gen/engram/v2/admin_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { invalidArgument, permissionDenied } from "../../platform/errors.js";
import { BackupError, createBackup } from "../../storage/backup.js";
import type { Storage } from "../../storage/database.js";

export interface AdminDeps {
  readonly storage: Storage;
  readonly dataDir: string;
}

export function adminService({ storage, dataDir }: AdminDeps): ServiceImpl<typeof AdminService> {
  return {
    async createBackup(req, ctx) {
      if (!isAdmin(callerOf(ctx))) throw permissionDenied("only an admin may take a backup");
      const started = Date.now();
      try {
        const backup = await createBackup(storage, dataDir, req.directory);
        return {
          directory: backup.directory,
          bytes: BigInt(backup.bytes),
          schemaVersion: backup.manifest.schema_version,
          createdAt: backup.manifest.created_at,
          tookMs: BigInt(Date.now() - started),
        };
      } catch (e: unknown) {
        if (!(e instanceof BackupError)) throw e;
        throw e.reason === "exists" ? new ConnectError(`directory: ${e.message}`, Code.AlreadyExists) : invalidArgument("directory", e.message);
      }
    },
  };
}
