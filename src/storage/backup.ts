// Backups of the store: an online, consistent copy of the LMDB environment with a manifest of sizes and checksums
// (taken while the server runs), and the offline restore that checks a backup and installs it as a data directory.
// Layout and guarantees are documented on AdminService in admin_service.proto.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { SCHEMA_VERSION, type Storage } from "./database.js";

export const BACKUP_FORMAT = "engram-backup";
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_FILE = "manifest.json";
/** The LMDB data file, under the backup directory as under a data directory. */
const DATA_FILE = path.join("lmdb", "data.mdb");

export interface BackupFile {
  /** Relative to the backup directory (and to the data directory it restores into). */
  readonly path: string;
  readonly bytes: number;
  /** Hex SHA-256 of the file's content. */
  readonly sha256: string;
}

export interface BackupManifest {
  readonly format: typeof BACKUP_FORMAT;
  readonly format_version: number;
  readonly schema_version: number;
  /** RFC 3339 time the backup began: its snapshot is of then (or of the end of a compaction then running). */
  readonly created_at: string;
  readonly files: readonly BackupFile[];
}

export interface BackupResult {
  readonly directory: string;
  readonly manifest: BackupManifest;
  readonly bytes: number;
}

/** Why a backup's target or a restore's source or target was refused; `reason` picks the answer's code. */
export class BackupError extends Error {
  constructor(
    message: string,
    readonly reason: "invalid" | "exists",
  ) {
    super(message);
  }
}

/**
 * Writes a backup of `storage` (the environment under `dataDir`) into `directory`: an absolute path outside the data
 * directory, missing (it is created) or empty. A failure removes what it wrote.
 */
export async function createBackup(storage: Storage, dataDir: string, directory: string): Promise<BackupResult> {
  const target = backupTarget(dataDir, directory);
  const existed = fs.existsSync(target);
  try {
    fs.mkdirSync(path.join(target, path.dirname(DATA_FILE)), { recursive: true });
  } catch (e: unknown) {
    throw new BackupError(`cannot create ${target}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, "invalid");
  }
  try {
    const createdAt = new Date().toISOString();
    await storage.copyTo(path.join(target, path.dirname(DATA_FILE)));
    const file = path.join(target, DATA_FILE);
    fsyncPath(file);
    const files = [{ path: DATA_FILE, bytes: fs.statSync(file).size, sha256: await sha256Of(file) }];
    const manifest: BackupManifest = { format: BACKUP_FORMAT, format_version: BACKUP_FORMAT_VERSION, schema_version: SCHEMA_VERSION, created_at: createdAt, files };
    // Written last and renamed into place: a directory holding a manifest holds a complete backup.
    const staged = path.join(target, `${MANIFEST_FILE}.partial`);
    fs.writeFileSync(staged, `${JSON.stringify(manifest, null, 2)}\n`);
    fsyncPath(staged);
    fs.renameSync(staged, path.join(target, MANIFEST_FILE));
    fsyncPath(path.join(target, path.dirname(DATA_FILE)));
    fsyncPath(target);
    return { directory: target, manifest, bytes: files.reduce((sum, f) => sum + f.bytes, 0) };
  } catch (e: unknown) {
    if (existed) for (const entry of fs.readdirSync(target)) fs.rmSync(path.join(target, entry), { recursive: true, force: true });
    else fs.rmSync(target, { recursive: true, force: true });
    throw e;
  }
}

/** The normalised target of a backup, or why it cannot be one. */
function backupTarget(dataDir: string, directory: string): string {
  if (directory.trim() === "") throw new BackupError("is required: an absolute path on the server", "invalid");
  if (!path.isAbsolute(directory)) throw new BackupError(`must be an absolute path on the server, got ${JSON.stringify(directory)}`, "invalid");
  const target = path.resolve(directory);
  const data = path.resolve(dataDir);
  if (target === data || target.startsWith(`${data}${path.sep}`)) throw new BackupError(`must be outside the data directory ${data}`, "invalid");
  if (fs.existsSync(target) && !isEmptyDirectory(target)) throw new BackupError(`${target} exists and is not an empty directory`, "exists");
  return target;
}

function isEmptyDirectory(dir: string): boolean {
  return fs.statSync(dir).isDirectory() && fs.readdirSync(dir).length === 0;
}

/**
 * Reads a backup's manifest and checks every file it lists (size and SHA-256), the format and the schema version;
 * throws a BackupError naming the first problem.
 */
export async function verifyBackup(backupDir: string): Promise<BackupManifest> {
  const manifestPath = path.join(backupDir, MANIFEST_FILE);
  if (!fs.existsSync(manifestPath)) throw new BackupError(`${backupDir} holds no ${MANIFEST_FILE}: not a backup, or an unfinished one`, "invalid");
  let manifest: BackupManifest;
  try {
    manifest = decodeManifest(JSON.parse(fs.readFileSync(manifestPath, "utf8")) as unknown);
  } catch (e: unknown) {
    throw new BackupError(`${manifestPath} is not a backup manifest: ${e instanceof Error ? e.message : String(e)}`, "invalid");
  }
  if (manifest.schema_version > SCHEMA_VERSION) {
    throw new BackupError(
      `the backup was made by a newer Engram (store schema version ${manifest.schema_version}; this build reads ${SCHEMA_VERSION}): restore it with that version or a later one`,
      "invalid",
    );
  }
  for (const file of manifest.files) {
    const full = path.join(backupDir, file.path);
    if (!fs.existsSync(full)) throw new BackupError(`${file.path} is missing from the backup`, "invalid");
    const bytes = fs.statSync(full).size;
    if (bytes !== file.bytes) throw new BackupError(`${file.path} has ${bytes} bytes, the manifest says ${file.bytes}: the backup is damaged`, "invalid");
    if ((await sha256Of(full)) !== file.sha256) throw new BackupError(`${file.path} does not match its SHA-256 in the manifest: the backup is damaged`, "invalid");
  }
  return manifest;
}

function decodeManifest(value: unknown): BackupManifest {
  if (typeof value !== "object" || value === null) throw new Error("not a JSON object");
  const m = value as Record<string, unknown>;
  if (m["format"] !== BACKUP_FORMAT) throw new Error(`format is not "${BACKUP_FORMAT}"`);
  if (m["format_version"] !== BACKUP_FORMAT_VERSION) throw new Error(`format_version ${JSON.stringify(m["format_version"])} is not ${BACKUP_FORMAT_VERSION}`);
  const schemaVersion = m["schema_version"];
  if (typeof schemaVersion !== "number" || !Number.isInteger(schemaVersion) || schemaVersion < 1) throw new Error("schema_version is not a positive integer");
  if (typeof m["created_at"] !== "string") throw new Error("created_at is not a string");
  if (!Array.isArray(m["files"]) || m["files"].length === 0) throw new Error("files is not a non-empty array");
  const files = (m["files"] as unknown[]).map((f): BackupFile => {
    const file = (typeof f === "object" && f !== null ? f : {}) as Record<string, unknown>;
    const { path: rel, bytes, sha256 } = file;
    // Only plain relative paths below the backup directory: a manifest never makes restore write elsewhere.
    if (typeof rel !== "string" || rel === "" || path.isAbsolute(rel) || path.normalize(rel).split(path.sep).includes("..")) throw new Error(`file path ${JSON.stringify(rel)} is not a relative path inside the backup`);
    if (typeof bytes !== "number" || !Number.isInteger(bytes) || bytes < 0) throw new Error(`bytes of ${rel} is not a size`);
    if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`sha256 of ${rel} is not a hex SHA-256`);
    return { path: path.normalize(rel), bytes, sha256 };
  });
  if (!files.some((f) => f.path === DATA_FILE)) throw new Error(`files does not list ${DATA_FILE}`);
  return { format: BACKUP_FORMAT, format_version: BACKUP_FORMAT_VERSION, schema_version: schemaVersion, created_at: m["created_at"] as string, files };
}

export interface RestoreResult {
  readonly dataDir: string;
  readonly manifest: BackupManifest;
  readonly bytes: number;
}

/**
 * Checks the backup in `backupDir` and copies it into `dataDir`, which must be missing or empty: offline, with no
 * server running on it. A failure removes what it wrote.
 */
export async function restoreBackup(backupDir: string, dataDir: string): Promise<RestoreResult> {
  const source = path.resolve(backupDir);
  const target = path.resolve(dataDir);
  if (fs.existsSync(target) && !isEmptyDirectory(target)) {
    throw new BackupError(`the data directory ${target} is not empty: restore into a new or empty directory`, "exists");
  }
  const manifest = await verifyBackup(source);
  const existed = fs.existsSync(target);
  try {
    for (const file of manifest.files) {
      const to = path.join(target, file.path);
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(path.join(source, file.path), to, fs.constants.COPYFILE_EXCL);
      fsyncPath(to);
      fsyncPath(path.dirname(to));
    }
    fsyncPath(target);
  } catch (e: unknown) {
    if (existed) for (const entry of fs.readdirSync(target)) fs.rmSync(path.join(target, entry), { recursive: true, force: true });
    else fs.rmSync(target, { recursive: true, force: true });
    throw e;
  }
  return { dataDir: target, manifest, bytes: manifest.files.reduce((sum, f) => sum + f.bytes, 0) };
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** Makes a file's content, or a directory's entries, durable. */
function fsyncPath(target: string): void {
  const fd = fs.openSync(target, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
