// `engram export` and `engram import`: pages an export into a JSON Lines file (or stdout), and streams such a file
// line by line into batched imports, with a progress bar on stderr when it is a terminal.
import fs from "node:fs";
import readline from "node:readline";
import { once } from "node:events";
import type { Writable } from "node:stream";
import cliProgress from "cli-progress";
import { ConnectError } from "@connectrpc/connect";
import type { EngramClient } from "../client/engram-client.js";

/**
 * Lines per import call (the server takes up to 500): each call is one transaction the server applies at once, so
 * smaller batches keep it responsive to other callers meanwhile, at little cost to the import's pace.
 */
export const IMPORT_BATCH_LINES = 100;
/** An import call is sent once its lines reach this many bytes, well under the server's request limit. */
export const IMPORT_BATCH_BYTES = 512 * 1024;

export type Counts = Record<string, number>;

export interface ExportSummary {
  readonly exported: Counts;
}

export interface ImportSummary {
  readonly imported: Counts;
  readonly unchanged: Counts;
}

/** Reports progress; a no-op unless stderr is a terminal. */
interface Progress {
  start(total: number, payload: object): void;
  update(value: number, payload: object): void;
  stop(): void;
}

function progressBar(format: string): Progress {
  if (process.stderr.isTTY !== true) return { start() {}, update() {}, stop() {} };
  const bar = new cliProgress.SingleBar({ format, stream: process.stderr, hideCursor: true, clearOnComplete: false }, cliProgress.Presets.shades_classic);
  return {
    start: (total, payload) => bar.start(total, 0, payload),
    update: (value, payload) => bar.update(value, payload),
    stop: () => bar.stop(),
  };
}

function add(into: Counts, counts: Readonly<Record<string, number>>): void {
  for (const [kind, n] of Object.entries(counts)) into[kind] = (into[kind] ?? 0) + n;
}

async function writeText(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

/** Writes the caller's whole export to `out`, one line per record after the header; resolves the counts by kind. */
export async function exportTo(client: EngramClient, out: Writable): Promise<ExportSummary> {
  const exported: Counts = {};
  // The number of records is not known in advance: the bar counts them and names the kind being read.
  const progress = progressBar("exporting {value} records | {kind} | {duration_formatted}");
  progress.start(0, { kind: "" });
  let records = 0;
  let pageToken = "";
  try {
    do {
      const page = await client.tenant.exportTenant({ pageToken, limit: 0 });
      if (page.lines.length > 0) await writeText(out, `${page.lines.join("\n")}\n`);
      add(exported, page.counts);
      for (const n of Object.values(page.counts)) records += n;
      progress.update(records, { kind: Object.keys(page.counts).at(-1) ?? "" });
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
  } finally {
    progress.stop();
  }
  return { exported };
}

/** Exports into `file` (written whole or not at all: a partial file is removed) or, without one, to stdout. */
export async function exportToFile(client: EngramClient, file: string | undefined): Promise<ExportSummary> {
  if (file === undefined) return exportTo(client, process.stdout);
  const partial = `${file}.partial`;
  const out = fs.createWriteStream(partial);
  try {
    const summary = await exportTo(client, out);
    out.end();
    await once(out, "finish");
    fs.renameSync(partial, file);
    return summary;
  } catch (e: unknown) {
    out.destroy();
    fs.rmSync(partial, { force: true });
    throw e;
  }
}

/**
 * Imports a JSON Lines export file: read line by line (never whole), sent in batches of at most IMPORT_BATCH_LINES
 * lines and IMPORT_BATCH_BYTES bytes, each applied by the server all or nothing. A refused line is reported by its
 * line number in the file; the batches before it stay imported, and running the import again resumes after them.
 */
export async function importFromFile(client: EngramClient, file: string): Promise<ImportSummary> {
  const total = fs.statSync(file).size;
  const summary = { imported: {} as Counts, unchanged: {} as Counts };
  const progress = progressBar("importing [{bar}] {percentage}% | {value}/{total} bytes | {duration_formatted}");
  progress.start(total, {});
  let batch: string[] = [];
  // The file's line number of each line of the batch (blank lines are skipped).
  let batchLineNumbers: number[] = [];
  let batchBytes = 0;
  let lineNumber = 0;
  let bytesRead = 0;
  const send = async (): Promise<void> => {
    if (batch.length === 0) return;
    const lineNumbers = batchLineNumbers;
    try {
      const result = await client.tenant.importTenant({ lines: batch });
      add(summary.imported, result.imported);
      add(summary.unchanged, result.unchanged);
    } catch (e: unknown) {
      throw inFile(e, file, lineNumbers);
    }
    batch = [];
    batchLineNumbers = [];
    batchBytes = 0;
    progress.update(Math.min(bytesRead, total), {});
  };
  const input = fs.createReadStream(file);
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      lineNumber++;
      bytesRead += Buffer.byteLength(line) + 1;
      if (line.trim() === "") continue;
      batch.push(line);
      batchLineNumbers.push(lineNumber);
      batchBytes += Buffer.byteLength(line);
      if (batch.length >= IMPORT_BATCH_LINES || batchBytes >= IMPORT_BATCH_BYTES) await send();
    }
    await send();
  } finally {
    lines.close();
    input.destroy();
    progress.stop();
  }
  return summary;
}

/** A refusal naming `lines[i]` of a batch, told as the line of the file it came from. */
function inFile(e: unknown, file: string, lineNumbers: readonly number[]): unknown {
  if (!(e instanceof ConnectError)) return e;
  const match = /^lines\[(\d+)\](\S*): ([\s\S]*)$/.exec(e.rawMessage);
  const line = match === null ? undefined : lineNumbers[Number(match[1])];
  if (match === null || line === undefined) return e;
  const field = (match[2] ?? "").replace(/^\./, "");
  return new ConnectError(`${file}:${line}${field === "" ? "" : ` (${field})`}: ${match[3] ?? ""}`, e.code);
}
