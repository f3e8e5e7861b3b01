// The Engram MCP server: the tool table and the run resources on the SDK's low-level Server, every call made through
// one EngramClient, so authentication, policy and isolation are the service's own whatever the MCP transport.
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { EngramClient } from "../client/engram-client.js";
import { boundedMessage, codeName, quoted } from "../platform/errors.js";
import { listRunResources, parseRunResource, readRunResource, RESOURCE_TEMPLATES } from "./resources.js";
import { toolDefinition } from "./tool-schemas.js";
import { MCP_TOOLS, toolNamed } from "./tools.js";

/** The MCP spec's JSON-RPC code for a resource that does not exist (not in the SDK's ErrorCode enum). */
const RESOURCE_NOT_FOUND = -32002;

const SERVER_INFO = { name: "engram", title: "Engram", version: "2.0.0" };

const INSTRUCTIONS =
  "Engram is your long-term memory and learning store. Work happens in runs (a run_id, called session_id by remember " +
  "and recall). Before acting, use recall or context to learn what is known and diagnose when something fails; " +
  "remember facts and decisions, archive exact artifacts (fetch them back with dereference), record_outcome and " +
  "record_step_outcome to say what worked, reflect to turn a run into lessons, list_lessons to see them, and handoff " +
  "to pass a task to another agent. Tool arguments and results are the Engram API's JSON (snake_case or lowerCamel " +
  "names); errors read `<code>: <message>` and name the field at fault.";

interface ServiceFailure {
  readonly code: Code;
  readonly text: string;
}

/** `<code>: <message>` of a service error; anything else is an internal error whose detail is not shown. */
function failureOf(e: unknown): ServiceFailure {
  if (e instanceof ConnectError) return { code: e.code, text: `${codeName(e.code)}: ${boundedMessage(e.rawMessage)}` };
  return { code: Code.Internal, text: "internal: internal error" };
}

let toolDefinitions: readonly Tool[] | undefined;

/** The tool list, derived from the protos once per process. */
function toolList(): Tool[] {
  toolDefinitions ??= MCP_TOOLS.map(toolDefinition);
  return [...toolDefinitions];
}

async function callTool(client: EngramClient, name: string, args: JsonObject, signal: AbortSignal, onError: (e: unknown) => void): Promise<CallToolResult> {
  const tool = toolNamed(name);
  // The MCP spec counts an unknown tool as a protocol error, not a tool result.
  if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${quoted(name)}; tools/list names the ${MCP_TOOLS.length} tools`);
  try {
    const json = await tool.invoke(client, args, { signal });
    return { content: [{ type: "text", text: JSON.stringify(json) }], structuredContent: json };
  } catch (e: unknown) {
    if (!(e instanceof ConnectError)) onError(e);
    // A tool error the agent can read and act on; the session goes on.
    return { isError: true, content: [{ type: "text", text: failureOf(e).text }] };
  }
}

/** A service error while listing or reading resources, as the JSON-RPC error the MCP client sees. */
function protocolError(e: unknown, onError: (e: unknown) => void): McpError {
  if (e instanceof McpError) return e;
  if (!(e instanceof ConnectError)) onError(e);
  const failure = failureOf(e);
  return new McpError(failure.code === Code.InvalidArgument ? ErrorCode.InvalidParams : ErrorCode.InternalError, failure.text);
}

export interface McpServerOptions {
  /** Told about unexpected failures in the handlers (not service errors, which are answers); default: ignored. */
  readonly onError?: ((error: unknown) => void) | undefined;
  /** Told about messages the transport refused (malformed JSON-RPC, wrong headers); default: ignored. */
  readonly onProtocolError?: ((error: Error) => void) | undefined;
}

/** A new MCP server whose tools and resources call Engram through `client` (one caller, one key). */
export function createMcpServer(client: EngramClient, options: McpServerOptions = {}): Server {
  const onError = options.onError ?? (() => undefined);
  const server = new Server(SERVER_INFO, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS });
  server.onerror = options.onProtocolError ?? (() => undefined);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolList() }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    // The SDK parsed the arguments from JSON-RPC text, so they are JSON.
    callTool(client, request.params.name, (request.params.arguments ?? {}) as JsonObject, extra.signal, onError),
  );
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [...RESOURCE_TEMPLATES] }));
  server.setRequestHandler(ListResourcesRequestSchema, async (request, extra) => {
    try {
      return await listRunResources(client, request.params?.cursor, extra.signal);
    } catch (e: unknown) {
      throw protocolError(e, onError);
    }
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const { uri } = request.params;
    const resource = parseRunResource(uri);
    if (resource === undefined) {
      throw new McpError(RESOURCE_NOT_FOUND, `no resource ${quoted(uri)}: expected engram://runs/<run_id>/lessons or engram://runs/<run_id>/activity`);
    }
    try {
      return await readRunResource(client, uri, resource, extra.signal);
    } catch (e: unknown) {
      throw protocolError(e, onError);
    }
  });
  return server;
}
