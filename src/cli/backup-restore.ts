// `engram backup` and `engram restore`: the first asks a running server for an online backup (AdminService, admin key),
// the second installs a backup offline as a new data directory, after checking it.
import path from "node:path";
import { AdminService } from "../../gen/engram/v2/admin_service_pb.js";
import type { EngramClient } from "../client/engram-client.js";
import { restoreBackup } from "../storage/backup.js";
import { printResponse } from "./output.js";

/**
 * Backs the server's store up into `directory` on the server's machine. A relative path is taken from the current
 * directory, which is where it points when the server runs on this machine too.
 */
export async function backupTo(client: EngramClient, directory: string): Promise<void> {
  const response = await client.admin.createBackup({ directory: path.resolve(directory) });
  printResponse(AdminService.method.createBackup.output, response);
}

/** Restores the backup in `backupDir` into the new or empty data directory `dataDir`; prints what it restored. */
export async function restoreTo(backupDir: string, dataDir: string): Promise<void> {
  const restored = await restoreBackup(backupDir, dataDir);
  const summary = {
    data_dir: restored.dataDir,
    schema_version: restored.manifest.schema_version,
    created_at: restored.manifest.created_at,
    bytes: restored.bytes,
    next: `SERVICE_DATA_DIR=${restored.dataDir} engram serve`,
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}
