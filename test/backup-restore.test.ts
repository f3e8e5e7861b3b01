// Online backup and restore. A backup taken (`engram backup`) while a writer keeps writing holds every write
// acknowledged before it began, each write wholly or not at all; `engram restore` installs it as a new data directory
// and a server started on it answers every read route as the source answered. A backup of a quiet store answers
// exactly as the source does. The route refuses bad targets and non-admins; restore refuses damaged backups and
// non-empty targets, leaving nothing behind.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { ensureBuilt } from "./harness/child-server.js";
import { readEveryPlane, R, seedEveryPlane, expectSameAnswers, type Seeded } from "./harness/every-plane.js";
import { expectCode, ok } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { MANIFEST_FILE, restoreBackup, type BackupManifest } from "../src/storage/backup.js";
import { SCHEMA_VERSION } from "../src/storage/database.js";

const ENV = { SERVICE_EMBEDDER: "hashed", SERVICE_CORE_ALLOW_ALL: "true", SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true" };
const BATCH_ITEMS = 5;
const BACKUP = "engram.v2.AdminService/CreateBackup";
const READER = "reader-x";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "engram-backup-"));
const started: TestServer[] = [];
let source: TestServer;
let c: Caller;
let alice = "";
let seeded: Seeded;

beforeAll(async () => {
  ensureBuilt();
  source = await startTestServer(ENV);
  started.push(source);
  c = restCaller(source.baseUrl);
  alice = await createUser(source.baseUrl, source.adminKey, "alice");
  await createUser(source.baseUrl, source.adminKey, READER);
  seeded = await seedEveryPlane(c, alice, READER);
}, 180_000);

afterAll(async () => {
  for (const server of started) await server.close();
  fs.rmSync(work, { recursive: true, force: true });
});

interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built `engram` command, as an operator would, against the source server with `key`. */
function cli(args: readonly string[], key = source.adminKey): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/src/cli/main.js", ...args], {
      env: { PATH: process.env["PATH"] ?? "", SERVICE_ENDPOINT: source.baseUrl, SERVICE_API_KEY: key },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function startOn(dataDir: string): Promise<TestServer> {
  // The admin user and its key's hash are in the store: the source's admin key is the restored server's too.
  const server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: source.adminKey }, dataDir);
  started.push(server);
  return server;
}

/** A write the writer made: its entries, and whether the server acknowledged it. */
interface Write {
  readonly run: "steady" | "batches";
  readonly tag: string;
  ids: string[];
  acknowledged: boolean;
}

/** Keeps writing as `key` — single remembers and batches of BATCH_ITEMS entries in one transaction — until stopped. */
function startWriter(key: string): { writes: Write[]; acknowledged(): number; stop(): Promise<void> } {
  const writes: Write[] = [];
  let running = true;
  const loop = (async () => {
    for (let n = 0; running; n++) {
      if (n % 2 === 0) {
        const write: Write = { run: "steady", tag: `steady fact ${n}`, ids: [], acknowledged: false };
        writes.push(write);
        const r = await ok(c, R.remember, { session_id: write.run, content: write.tag }, key);
        write.ids = [String(r["entry_id"])];
        write.acknowledged = true;
      } else {
        const write: Write = { run: "batches", tag: `batch ${n}`, ids: [], acknowledged: false };
        writes.push(write);
        const items = Array.from({ length: BATCH_ITEMS }, (_, i) => ({ text: `${write.tag} item ${i}` }));
        const r = await ok(c, R.batchInsert, { run_id: write.run, items }, key);
        write.ids = (r["entry_ids"] as string[]).map(String);
        write.acknowledged = true;
      }
    }
  })();
  return {
    writes,
    acknowledged: () => writes.filter((w) => w.acknowledged).length,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** The writer's entries a server holds, by the tag of the write that made them. */
async function entriesByTag(caller: Caller, key: string): Promise<Map<string, string[]>> {
  const byTag = new Map<string, string[]>();
  for (const run of ["steady", "batches"]) {
    const page = await ok(caller, R.activity, { run_id: run, sort: "asc", limit: 1000 }, key);
    for (const entry of page["entries"] as JsonObject[]) {
      const tag = String(entry["content"]).replace(/ item \d+$/, "");
      byTag.set(tag, [...(byTag.get(tag) ?? []), String(entry["id"])]);
    }
  }
  return byTag;
}

describe("a backup taken while writes go on", () => {
  it("holds every write acknowledged before it began, each write whole, and restores into a server that answers alike", async () => {
    const writerKey = await createUser(source.baseUrl, source.adminKey, "writer");
    // The writer writes as its own user: every read of alice's answers as it did when the backup was taken.
    const before = await readEveryPlane(c, alice, source.adminKey, seeded, READER);
    const writer = startWriter(writerKey);
    while (writer.acknowledged() < 20) await new Promise((resolve) => setImmediate(resolve));

    const acknowledgedBefore = writer.writes.filter((w) => w.acknowledged).map((w) => ({ ...w }));
    const backupDir = path.join(work, "while-writing");
    const backup = await cli(["backup", backupDir]);
    const acknowledgedAfter = writer.acknowledged();
    await writer.stop();
    expect(backup.code, backup.stderr).toBe(0);
    // The writer kept writing while the backup ran.
    expect(acknowledgedAfter).toBeGreaterThan(acknowledgedBefore.length);
    const answered = JSON.parse(backup.stdout) as JsonObject;
    expect(answered).toMatchObject({ directory: backupDir, schema_version: SCHEMA_VERSION });
    expect(Number(answered["bytes"])).toBeGreaterThan(0);
    // The store only: no vector graph files (derived) and no admin.key (a secret in clear).
    expect(fs.readdirSync(backupDir, { recursive: true }).map(String).sort()).toEqual(["lmdb", path.join("lmdb", "data.mdb"), MANIFEST_FILE].sort());
    expect(fs.readFileSync(path.join(backupDir, "lmdb", "data.mdb")).includes(source.adminKey.split("_")[3] as string)).toBe(false);

    const dataDir = path.join(work, "restored-1");
    const restore = await cli(["restore", backupDir, "--data-dir", dataDir]);
    expect(restore.code, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ data_dir: dataDir, schema_version: SCHEMA_VERSION, created_at: answered["created_at"] });
    const restored = await startOn(dataDir);
    const r = restCaller(restored.baseUrl);

    const held = await entriesByTag(r, writerKey);
    for (const write of acknowledgedBefore) expect(held.get(write.tag), write.tag).toEqual(write.ids);
    const tags = new Map(writer.writes.map((w) => [w.tag, w]));
    for (const [tag, ids] of held) {
      const write = tags.get(tag);
      // Nothing the writer did not write; a write is wholly there (with its ids, if it was acknowledged) or absent.
      expect(write, tag).toBeDefined();
      expect(ids.length, tag).toBe(write?.run === "batches" ? BATCH_ITEMS : 1);
      if (write?.acknowledged === true) expect(ids, tag).toEqual(write.ids);
    }
    // Writes went on after the copy's moment: the backup is that moment's store, not the store it was answered with.
    expect(writer.writes.filter((w) => w.acknowledged && !held.has(w.tag)).length).toBeGreaterThan(0);
    expectSameAnswers(before, await readEveryPlane(r, alice, source.adminKey, seeded, READER));

    // The restored server takes writes, under the same keys.
    const written = await ok(r, R.remember, { session_id: "after-restore", content: "Written on the restored server." }, alice);
    expect(String(written["entry_id"])).toMatch(/^ent_/);
  }, 180_000);
});

describe("a backup of a quiet store", () => {
  it("restores into a server whose every read answers as the source's", async () => {
    const backupDir = path.join(work, "quiet", "nested");
    const answer = await ok(c, BACKUP, { directory: backupDir }, source.adminKey);
    expect(answer).toMatchObject({ directory: backupDir, schema_version: SCHEMA_VERSION });
    const manifest = JSON.parse(fs.readFileSync(path.join(backupDir, MANIFEST_FILE), "utf8")) as BackupManifest;
    expect(manifest).toMatchObject({ format: "engram-backup", format_version: 1, schema_version: SCHEMA_VERSION, created_at: answer["created_at"] });
    expect(manifest.files.map((f) => f.path)).toEqual([path.join("lmdb", "data.mdb")]);
    expect(String(manifest.files[0]?.bytes)).toBe(String(answer["bytes"]));

    const dataDir = path.join(work, "restored-2");
    await restoreBackup(backupDir, dataDir);
    const restored = await startOn(dataDir);
    expectSameAnswers(await readEveryPlane(c, alice, source.adminKey, seeded, READER), await readEveryPlane(restCaller(restored.baseUrl), alice, source.adminKey, seeded, READER));
  }, 120_000);
});

describe("refusals", () => {
  it("the route refuses non-admins, relative paths, the data directory and non-empty directories, writing nothing", async () => {
    const target = path.join(work, "refused");
    expectCode(await c.call(BACKUP, { directory: target }, alice), "permission_denied", 403);
    for (const directory of ["", "relative/dir", source.dataDir, path.join(source.dataDir, "inside")]) {
      const r = await c.call(BACKUP, { directory }, source.adminKey);
      expectCode(r, "invalid_argument", 400);
      expect(r.message).toMatch(/^directory: /);
    }
    fs.mkdirSync(target);
    fs.writeFileSync(path.join(target, "keep.txt"), "mine");
    const taken = await c.call(BACKUP, { directory: target }, source.adminKey);
    expectCode(taken, "already_exists", 409);
    expect(taken.message).toContain("is not an empty directory");
    expect(fs.readdirSync(target)).toEqual(["keep.txt"]);
    expect(fs.existsSync(path.join(source.dataDir, "inside"))).toBe(false);
  });

  it("restore refuses a non-empty data directory, a damaged backup and a newer schema version, writing nothing", async () => {
    const backupDir = path.join(work, "to-damage");
    await ok(c, BACKUP, { directory: backupDir }, source.adminKey);

    const occupied = path.join(work, "occupied");
    fs.mkdirSync(occupied);
    fs.writeFileSync(path.join(occupied, "data.txt"), "x");
    const refused = await cli(["restore", backupDir, "--data-dir", occupied]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`the data directory ${occupied} is not empty`);

    const damaged = path.join(work, "damaged");
    fs.cpSync(backupDir, damaged, { recursive: true });
    const file = path.join(damaged, "lmdb", "data.mdb");
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 0xff;
    fs.writeFileSync(file, bytes);
    const target = path.join(work, "never-made");
    const corrupt = await cli(["restore", damaged, "--data-dir", target]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stderr).toContain("does not match its SHA-256 in the manifest: the backup is damaged");
    expect(fs.existsSync(target)).toBe(false);

    const newer = path.join(work, "newer");
    fs.cpSync(backupDir, newer, { recursive: true });
    const manifestPath = path.join(newer, MANIFEST_FILE);
    const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8")) as BackupManifest;
    fs.writeFileSync(manifestPath, JSON.stringify({ ...manifest, schema_version: SCHEMA_VERSION + 1 }));
    await expect(restoreBackup(newer, target)).rejects.toThrow(`the backup was made by a newer Engram (store schema version ${SCHEMA_VERSION + 1}`);
    fs.rmSync(path.join(newer, MANIFEST_FILE));
    await expect(restoreBackup(newer, target)).rejects.toThrow("holds no manifest.json");
    expect(fs.existsSync(target)).toBe(false);
  });
});
