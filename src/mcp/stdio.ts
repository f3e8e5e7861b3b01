// Runs the Engram MCP server over stdin/stdout for `engram mcp`: an MCP client spawns the command and every tool call
// goes to a running Engram server through the TypeScript client. Stdout carries protocol messages only; problems go
// to stderr.
import process from "node:process";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { EngramClient } from "../client/engram-client.js";
import { createMcpServer } from "./mcp-server.js";

function report(what: string, e: unknown): void {
  process.stderr.write(`engram mcp: ${what}: ${e instanceof Error ? e.message : String(e)}\n`);
}

/** Serves MCP on this process's stdio until the client closes stdin (or the transport fails). */
export async function serveMcpOverStdio(client: EngramClient): Promise<void> {
  const server = createMcpServer(client, {
    onError: (e) => report("tool failed", e),
    onProtocolError: (e) => report("protocol error", e),
  });
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  // The SDK's stdio transport does not watch for the end of stdin: the client closing its end ends the session.
  process.stdin.once("end", () => void server.close());
  await server.connect(new StdioServerTransport(process.stdin, process.stdout));
  await closed;
}
