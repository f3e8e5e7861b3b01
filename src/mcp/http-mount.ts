// Serves MCP's Streamable HTTP transport at /mcp on the main port. Stateless: each POST gets a new MCP server and
// transport, and nothing outlives the request. The caller's Bearer key is checked first (401 without touching MCP),
// then the tools call this same server over loopback with that key, so the service's own authentication, policy
// and isolation apply to every tool call unchanged.
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { bearerToken } from "../auth/api-key.js";
import type { Authenticator } from "../auth/authenticator.js";
import { createEngramClient } from "../client/engram-client.js";
import { boundedMessage } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { HttpResponder } from "../transport/gateway/responder.js";
import { MAX_JSON_DEPTH, jsonDepth } from "../transport/json-depth.js";
import { abandonBody, readBoundedBody, type NodeRequest, type NodeResponse } from "../transport/request-body.js";
import type { Mount } from "../transport/rpc-router.js";
import { createMcpServer } from "./mcp-server.js";

export const MCP_PATH = "/mcp";

/** JSON-RPC's code for an error the server defines; the MCP SDK answers transport-level refusals with it. */
const SERVER_ERROR = -32000;
const INVALID_REQUEST = -32600;
const INTERNAL_ERROR = -32603;

export interface McpMountOptions {
  readonly authenticator: Authenticator;
  /** The largest request body read (SERVICE_MAX_REQUEST_BYTES); a larger one is 413. */
  readonly maxRequestBytes: number;
  readonly logger: Logger;
}

/** An HTTP error answered before MCP is involved, with the JSON-RPC error body MCP clients read. */
function refuse(out: HttpResponder, status: number, code: number, message: string): void {
  out.send(status, "application/json", JSON.stringify({ jsonrpc: "2.0", error: { code, message: boundedMessage(message) }, id: null }));
}

/**
 * This server's address as the request reached it (the local end of its connection): always this server, whatever
 * SERVICE_HOST binds, over the cleartext port the one-port server serves.
 */
export function selfEndpoint(req: NodeRequest): string {
  const address = req.socket.localAddress ?? "127.0.0.1";
  // An IPv6 address goes in brackets, and a zone id's `%` is escaped in a URL.
  const host = address.includes(":") ? `[${address.replace("%", "%25")}]` : address;
  return `http://${host}:${req.socket.localPort ?? 0}`;
}

/** The headers the SDK's transport reads from a POST: content negotiation and the protocol version. */
const FORWARDED_HEADERS = ["accept", "content-type", "mcp-protocol-version"] as const;

async function serve(req: NodeRequest, res: NodeResponse, options: McpMountOptions): Promise<void> {
  const out = new HttpResponder(res);
  // Stateless Streamable HTTP has no server-initiated stream (GET) and no session to end (DELETE).
  if ((req.method ?? "").toUpperCase() !== "POST") {
    abandonBody(req, res);
    res.setHeader("allow", "POST");
    refuse(out, 405, SERVER_ERROR, "Method not allowed: /mcp is stateless Streamable HTTP and takes POST only.");
    return;
  }
  const authorization = req.headers["authorization"];
  try {
    options.authenticator.authenticate(authorization ?? null);
  } catch (e: unknown) {
    if (!(e instanceof ConnectError) || e.code !== Code.Unauthenticated) throw e;
    abandonBody(req, res);
    res.setHeader("www-authenticate", 'Bearer realm="engram"');
    refuse(out, 401, SERVER_ERROR, `Unauthorized: ${e.rawMessage}`);
    return;
  }
  const body = await readBoundedBody(req, res, options.maxRequestBytes);
  if (body === "too_large") {
    refuse(out, 413, SERVER_ERROR, `Request body is larger than ${options.maxRequestBytes} bytes.`);
    return;
  }
  // Checked on the raw bytes before the SDK parses and walks the message, as on every other route.
  if (jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    refuse(out, 400, INVALID_REQUEST, `Invalid Request: JSON nests deeper than ${MAX_JSON_DEPTH} levels.`);
    return;
  }

  const headers = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = req.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  const client = createEngramClient({ endpoint: selfEndpoint(req), apiKey: bearerToken(authorization), transport: "http", env: {} });
  const server = createMcpServer(client, {
    onError: (e) => options.logger.warn({ err: e }, "mcp tool failed"),
    onProtocolError: (e) => options.logger.debug({ reason: e.message }, "mcp request refused"),
  });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    // One JSON answer per POST: no SSE stream to keep open, nothing to resume.
    enableJsonResponse: true,
    maxRequestBodySize: options.maxRequestBytes,
  });
  // Settles when the client leaves (or once it has its answer): a JSON answer still being prepared is then dropped.
  const left = new Promise<undefined>((resolve) => out.onClose(() => resolve(undefined)));
  try {
    await server.connect(transport);
    const response = await Promise.race([transport.handleRequest(new Request(`http://engram${MCP_PATH}`, { method: "POST", headers, body })), left]);
    if (response === undefined) return;
    const bytes = new Uint8Array(await response.arrayBuffer());
    // A notification's answer (202) has no body; its content type then says nothing.
    out.send(response.status, response.headers.get("content-type") ?? "application/json", bytes);
  } finally {
    // Closing aborts the handlers of tool calls still in flight (a client that left), so nothing outlives the request.
    await server.close();
  }
}

/** The /mcp mount of the main port. */
export function mcpMount(options: McpMountOptions): Mount {
  return {
    path: MCP_PATH,
    listener: (req, res) => {
      serve(req, res, options).catch((e: unknown) => {
        options.logger.error({ err: e }, "mcp request failed");
        refuse(new HttpResponder(res), 500, INTERNAL_ERROR, "internal error");
      });
    },
  };
}
