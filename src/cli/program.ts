// The `engram` command tree: `serve`, `users …`, `remember`, `recall`, `mcp`, `export`, `import`, `backup`, `restore`, with the client options shared by all.
import { Command, InvalidArgumentError, Option } from "commander";
import { createEngramClient, type EngramClient } from "../client/engram-client.js";
import type { TransportKind } from "../client/options.js";
import { AuthService } from "../../gen/engram/v2/auth_service_pb.js";
import { MemoryService } from "../../gen/engram/v2/memory_service_pb.js";
import { printResponse } from "./output.js";

interface GlobalOptions {
  endpoint?: string;
  apiKey?: string;
  transport?: TransportKind;
}

/** The client for the options given on the command line; the client falls back to SERVICE_* for the rest. */
function clientOf(command: Command): EngramClient {
  const { endpoint, apiKey, transport } = command.optsWithGlobals<GlobalOptions>();
  return createEngramClient({ endpoint, apiKey, transport });
}

function positiveInteger(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError("must be a positive integer");
  return value;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function addUsersCommands(program: Command): void {
  const users = program.command("users").description("manage users and their API keys (all but `get` of yourself need an admin key)");
  users
    .command("create")
    .description("create a user and print its first API key (shown only once)")
    .argument("<username>", "1-64 letters, digits, '.', '-' or '_'")
    .addOption(new Option("--role <role>", "role of the new user (default: user)").choices(["admin", "user"]))
    .action(async (username: string, opts: { role?: string }, command: Command) => {
      const res = await clientOf(command).auth.createUser({ username, role: opts.role ?? "" });
      printResponse(AuthService.method.createUser.output, res);
    });
  users
    .command("list")
    .description("list all users, without secrets")
    .action(async (_opts: object, command: Command) => {
      printResponse(AuthService.method.listUsers.output, await clientOf(command).auth.listUsers({}));
    });
  users
    .command("get")
    .description("show one user, without secrets")
    .argument("<username>", "user to show")
    .action(async (username: string, _opts: object, command: Command) => {
      printResponse(AuthService.method.getUser.output, await clientOf(command).auth.getUser({ username }));
    });
  users
    .command("rotate")
    .description("replace the user's API key and print the new one (the old key stops working at once)")
    .argument("<username>", "user whose key is replaced")
    .action(async (username: string, _opts: object, command: Command) => {
      printResponse(AuthService.method.rotateUserApiKey.output, await clientOf(command).auth.rotateUserApiKey({ username }));
    });
  users
    .command("revoke")
    .description("revoke the user's active API key")
    .argument("<username>", "user whose key is revoked")
    .action(async (username: string, _opts: object, command: Command) => {
      printResponse(AuthService.method.revokeUserApiKey.output, await clientOf(command).auth.revokeUserApiKey({ username }));
    });
}

interface RememberOptions {
  session: string;
  agent?: string;
  user?: string;
  intent?: string;
  lessonScope?: string;
}

function addRememberCommand(program: Command): void {
  program
    .command("remember")
    .description("store a fact or a lesson")
    .argument("<content...>", "text to store (words are joined with spaces)")
    .requiredOption("--session <id>", "session the entry belongs to")
    .option("--agent <id>", "agent that writes the entry")
    .option("--user <id>", "logical user the entry is about")
    .addOption(new Option("--intent <intent>", "kind of entry (default: fact)").choices(["fact", "lesson"]))
    .addOption(
      new Option("--lesson-scope <scope>", "for lessons: where they are recalled (default: session)").choices([
        "global",
        "session",
        "run",
      ]),
    )
    .action(async (content: string[], opts: RememberOptions, command: Command) => {
      const res = await clientOf(command).memory.remember({
        sessionId: opts.session,
        agentId: opts.agent ?? "",
        userId: opts.user ?? "",
        content: content.join(" "),
        intent: opts.intent ?? "",
        lessonScope: opts.lessonScope ?? "",
      });
      printResponse(MemoryService.method.remember.output, res);
    });
}

interface RecallOptions {
  session: string;
  agent?: string;
  user?: string;
  type?: string[];
  limit?: number;
}

function addRecallCommand(program: Command): void {
  program
    .command("recall")
    .description("answer a question from a session's memory, with ranked evidence")
    .argument("<query...>", "the question (words are joined with spaces)")
    .requiredOption("--session <id>", "session to answer from")
    .option("--agent <id>", "agent asking")
    .option("--user <id>", "only entries about this logical user")
    .option("--type <type>", "only this entry type (repeatable): fact, lesson, rule, trace, …", collect)
    .option("--limit <n>", "how many evidence items to return (default 10, at most 100)", positiveInteger)
    .action(async (query: string[], opts: RecallOptions, command: Command) => {
      const res = await clientOf(command).memory.recall({
        sessionId: opts.session,
        agentId: opts.agent ?? "",
        userId: opts.user ?? "",
        query: query.join(" "),
        entryTypes: opts.type ?? [],
        limit: opts.limit ?? 0,
      });
      printResponse(MemoryService.method.recall.output, res);
    });
}

function addMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("serve the Model Context Protocol on stdin/stdout (for MCP clients that spawn a command), calling the server at --endpoint with --api-key; stdout carries only protocol messages")
    .action(async (_opts: object, command: Command) => {
      const client = clientOf(command);
      // Loaded on demand, so other commands do not load the MCP SDK.
      const { serveMcpOverStdio } = await import("../mcp/stdio.js");
      await serveMcpOverStdio(client);
    });
}

function addTransferCommands(program: Command): void {
  program
    .command("export")
    .description("write your whole memory as JSON Lines (see tenant_service.proto); counts by kind go to stderr, or to stdout with --output")
    .option("--output <file>", "file to write (default: stdout)")
    .action(async (opts: { output?: string }, command: Command) => {
      const { exportToFile } = await import("./tenant-transfer.js");
      const summary = await exportToFile(clientOf(command), opts.output);
      (opts.output === undefined ? process.stderr : process.stdout).write(`${JSON.stringify(summary, null, 2)}\n`);
    });
  program
    .command("import")
    .description("write an export file into your memory (again: nothing changes); prints the counts by kind")
    .argument("<file>", "JSON Lines file written by `engram export`")
    .action(async (file: string, _opts: object, command: Command) => {
      const { importFromFile } = await import("./tenant-transfer.js");
      const summary = await importFromFile(clientOf(command), file);
      process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    });
}

function addBackupCommands(program: Command): void {
  program
    .command("backup")
    .description("ask the server (admin key) for an online backup of its whole store into DIR, on the server's machine; writes go on meanwhile")
    .argument("<dir>", "new or empty directory; a relative path is taken from the current directory")
    .action(async (dir: string, _opts: object, command: Command) => {
      const { backupTo } = await import("./backup-restore.js");
      await backupTo(clientOf(command), dir);
    });
  program
    .command("restore")
    .description("check a backup (manifest, sizes, SHA-256) and copy it into a new or empty data directory, offline; then start `engram serve` on it")
    .argument("<backup-dir>", "directory written by `engram backup`")
    .requiredOption("--data-dir <dir>", "data directory to create (SERVICE_DATA_DIR of the server that will use it)")
    .action(async (backupDir: string, opts: { dataDir: string }) => {
      const { restoreTo } = await import("./backup-restore.js");
      await restoreTo(backupDir, opts.dataDir);
    });
}

export function buildProgram(): Command {
  const program = new Command("engram")
    .description("Engram: a memory store for agents. Client commands print JSON responses on stdout.")
    .option("--endpoint <url>", "server URL (default: $SERVICE_ENDPOINT, else http://localhost:3000)")
    .option("--api-key <key>", "API key (default: $SERVICE_API_KEY)")
    .addOption(
      new Option("--transport <transport>", "grpc, or http for the HTTP/JSON routes (default: $SERVICE_TRANSPORT, else http)").choices([
        "grpc",
        "http",
      ]),
    )
    .showHelpAfterError("(add --help for usage)");
  program
    .command("serve")
    .description("start the server (configured by SERVICE_PORT, SERVICE_DATA_DIR and the other SERVICE_* variables)")
    .action(async () => {
      // Loaded on demand, so client commands do not load storage and its native modules.
      const { main } = await import("../main.js");
      await main();
    });
  // Subcommands made with .command() inherit settings such as showHelpAfterError.
  addUsersCommands(program);
  addRememberCommand(program);
  addRecallCommand(program);
  addMcpCommand(program);
  addTransferCommands(program);
  addBackupCommands(program);
  return program;
}
