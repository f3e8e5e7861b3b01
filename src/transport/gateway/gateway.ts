// The HTTP/JSON gateway: routes built at start-up from google.api.http options, dispatched in-process to the
// same Connect handlers (and so the same interceptors) that serve gRPC and Connect.
import { CONSISTENCY_TOKEN_HEADER } from "../interceptors/cluster.js";
import { COST_HEADER } from "../../platform/cost-meter.js";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import {
  encodeEnvelope,
  pipe,
  transformSplitEnvelope,
  type UniversalHandler,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { endStreamFlag } from "@connectrpc/connect/protocol-connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { boundedMessage, codeFromName, HTTP_STATUS_HEADER, httpStatusOf, quoted } from "../../platform/errors.js";
import type { Logger } from "../../platform/logger.js";
import type { Admitting } from "../call-admission.js";
import { admittedCallKey, viaGatewayKey } from "../call-context.js";
import { isRemovedRpc } from "../removed-rpcs.js";
import { abandonBody, readBoundedBody, type NodeRequest } from "../request-body.js";
import { bindingsOf, RouteTable, type HttpBinding } from "./http-rule.js";
import { requestJson } from "./request-json.js";
import { HttpResponder, type NodeResponse } from "./responder.js";
import { sendError } from "./error-body.js";
import { SSE_KEEPALIVE, sseData } from "./sse.js";

const KEEPALIVE_MS = 15_000;
const decoder = new TextDecoder();

class BodyTooLarge extends Error {}

/** The whole body, up to maxBytes; past that, the rest is left to abandonBody and BodyTooLarge is thrown. */
async function readBody(req: NodeRequest, res: NodeResponse, maxBytes: number): Promise<Buffer> {
  const body = await readBoundedBody(req, res, maxBytes);
  if (body === "too_large") throw new BodyTooLarge();
  return body;
}

/** The HTTP status a service asked for with HTTP_STATUS_HEADER, if any. */
function requestedStatus(header: Headers | undefined): number | undefined {
  const status = Number(header?.get(HTTP_STATUS_HEADER));
  return Number.isInteger(status) && status >= 200 && status <= 599 ? status : undefined;
}

/**
 * Response metadata HTTP clients read as header fields: the rate limit's (see interceptors/rate-limit.ts), the
 * consistency token and the call's provider cost (interceptors/cost.ts).
 */
const RELAYED_HEADERS = ["retry-after", "ratelimit", "ratelimit-policy", CONSISTENCY_TOKEN_HEADER, COST_HEADER] as const;

function relayHeaders(from: Headers | undefined, res: NodeResponse): void {
  if (from === undefined || res.headersSent) return;
  for (const name of RELAYED_HEADERS) {
    const value = from.get(name);
    if (value !== null) res.setHeader(name, value);
  }
}

/** A Connect end-of-stream message's metadata (`{"name": ["value"]}`) as Headers. */
function endStreamHeaders(metadata: Record<string, string[]> | undefined): Headers {
  const headers = new Headers();
  for (const [name, values] of Object.entries(metadata ?? {})) for (const value of values) headers.append(name, value);
  return headers;
}

async function collect(body: AsyncIterable<Uint8Array> | undefined): Promise<Uint8Array> {
  if (body === undefined) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  for await (const part of body) parts.push(part);
  return Buffer.concat(parts);
}

interface ConnectErrorJson {
  code?: string;
  message?: string;
  details?: unknown[];
}

export class HttpGateway {
  readonly #routes: RouteTable;
  readonly #handlers: Map<string, UniversalHandler>;
  readonly #maxBodyBytes: number;
  readonly #logger: Logger;
  readonly #admitting: Admitting | undefined;

  constructor(handlers: readonly UniversalHandler[], maxBodyBytes: number, logger: Logger, admitting?: Admitting) {
    // A method has one handler per protocol set; the Connect-protocol one is what the gateway speaks.
    this.#handlers = new Map(handlers.map((h) => [`${h.service.typeName}/${h.method.name}`, h]));
    const bindings: HttpBinding[] = [];
    for (const handler of this.#handlers.values()) bindings.push(...bindingsOf(handler.method));
    this.#routes = new RouteTable(bindings);
    this.#maxBodyBytes = maxBodyBytes;
    this.#logger = logger;
    this.#admitting = admitting;
  }

  /** The largest request body accepted, on this gateway and on the RPC paths beside it. */
  get maxBodyBytes(): number {
    return this.#maxBodyBytes;
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const out = new HttpResponder(res);
    try {
      await this.#dispatch(req, res, out);
    } catch (e: unknown) {
      if (e instanceof BodyTooLarge) {
        sendError(out, Code.ResourceExhausted, `request body is larger than ${this.#maxBodyBytes} bytes`, 413);
      } else if (e instanceof ConnectError) {
        sendError(out, e.code, e.rawMessage);
      } else {
        this.#logger.error({ err: e }, "gateway failure");
        sendError(out, Code.Internal, "internal error");
      }
    }
  }

  async #dispatch(req: NodeRequest, res: NodeResponse, out: HttpResponder): Promise<void> {
    const started = process.hrtime.bigint();
    const url = new URL(req.url ?? "/", "http://gateway");
    const verb = (req.method ?? "GET").toUpperCase();
    const match = this.#routes.match(verb, url.pathname);
    if (match === undefined) {
      abandonBody(req, res);
      sendError(out, Code.NotFound, `no route for ${verb} ${quoted(url.pathname)}`);
      return;
    }
    if (match === "method_not_allowed") {
      abandonBody(req, res);
      sendError(out, Code.Unimplemented, `${verb} is not allowed on ${quoted(url.pathname)}`, 405);
      return;
    }
    const { binding, pathParams } = match;
    // Every answer of a deprecated RPC (`option deprecated = true`), success or error, says so.
    if (binding.method.deprecated) res.setHeader("deprecation", "true");
    // The call is charged before its body is read; a refusal reads none of it.
    const admitted = this.#admitting?.admission.admit(binding.method.parent.typeName, req.headers["authorization"]);
    if (admitted?.refusal !== undefined) {
      abandonBody(req, res);
      for (const [name, value] of admitted.fields) res.setHeader(name, value);
      sendError(out, Code.ResourceExhausted, admitted.refusal);
      const call = { method: binding.method, transport: "http" as const, keyId: admitted.principal.keyId, started };
      this.#admitting?.record(call, Code.ResourceExhausted, { message: admitted.refusal });
      return;
    }
    // A removed route answers `gone` whatever its body, so the body is not read; nor is one sent with GET or DELETE.
    const removed = isRemovedRpc(binding.method);
    const readsBody = !removed && verb !== "GET" && verb !== "DELETE";
    if (!readsBody) abandonBody(req, res);
    const body = readsBody ? await readBody(req, res, this.#maxBodyBytes) : Buffer.alloc(0);
    const json = removed ? {} : requestJson(binding, { body, pathParams, query: url.searchParams });
    const handler = this.#handlers.get(`${binding.method.parent.typeName}/${binding.method.name}`);
    if (handler === undefined) throw new ConnectError(`no handler for ${binding.template}`, Code.Internal);
    // Aborts the handler only when the client leaves before its answer: aborting every finished request costs a
    // DOMException with a stack trace per request (and one per linked signal inside Connect).
    const abort = new AbortController();
    let answered = false;
    out.onClose(() => {
      if (!answered) abort.abort();
    });
    const header = new Headers({ "connect-protocol-version": "1" });
    const authorization = req.headers["authorization"];
    if (typeof authorization === "string") header.set("authorization", authorization);
    const token = req.headers[CONSISTENCY_TOKEN_HEADER];
    if (typeof token === "string") header.set(CONSISTENCY_TOKEN_HEADER, token);
    const request = {
      httpVersion: "1.1",
      url: `http://gateway${handler.requestPath}`,
      method: "POST",
      header,
      signal: abort.signal,
      contextValues: createContextValues().set(viaGatewayKey, true).set(admittedCallKey, admitted),
    };
    if (binding.method.methodKind === "server_streaming") {
      header.set("content-type", "application/connect+json");
      const envelope = encodeEnvelope(0, new TextEncoder().encode(JSON.stringify(json)));
      const response = await handler({ ...request, body: (async function* () { yield envelope; })() });
      relayHeaders(response.header, res);
      await this.#stream(response, out, res);
    } else {
      header.set("content-type", "application/json");
      const response = await handler({ ...request, body: json });
      relayHeaders(response.header, res);
      await this.#unary(binding, response, out);
    }
    answered = true;
  }

  async #unary(binding: HttpBinding, response: UniversalServerResponse, out: HttpResponder): Promise<void> {
    const bytes = await collect(response.body);
    if (response.status !== 200) {
      const error = JSON.parse(decoder.decode(bytes)) as ConnectErrorJson;
      this.#sendConnectError(error, response.header, out);
      return;
    }
    const status = requestedStatus(response.header) ?? 200;
    if (binding.responseBody === "") {
      out.send(status, "application/json", bytes);
      return;
    }
    const value = (JSON.parse(decoder.decode(bytes)) as JsonObject)[binding.responseBody];
    if (binding.method.output.field[binding.responseBody]?.message?.typeName === "google.api.HttpBody") {
      const httpBody = (value ?? {}) as { content_type?: string; data?: string };
      out.send(status, httpBody.content_type || "application/octet-stream", Buffer.from(httpBody.data ?? "", "base64"));
    } else {
      out.send(status, "application/json", JSON.stringify(value ?? null));
    }
  }

  #sendConnectError(error: ConnectErrorJson, header: Headers | undefined, out: HttpResponder): void {
    const code = codeFromName(error.code ?? "unknown");
    out.send(
      requestedStatus(header) ?? httpStatusOf(code),
      "application/json",
      JSON.stringify({ code: error.code ?? "unknown", message: boundedMessage(error.message ?? ""), details: error.details ?? [] }),
    );
  }

  /** Relays a Connect server stream as SSE. Errors before the first message are plain HTTP errors. */
  async #stream(response: UniversalServerResponse, out: HttpResponder, res: NodeResponse): Promise<void> {
    if (response.status !== 200) {
      this.#sendConnectError(JSON.parse(decoder.decode(await collect(response.body))) as ConnectErrorJson, response.header, out);
      return;
    }
    let opened = false;
    let keepalive: NodeJS.Timeout | undefined;
    try {
      for await (const envelope of pipe(response.body ?? (async function* () {})(), transformSplitEnvelope(this.#maxBodyBytes))) {
        const text = decoder.decode(envelope.data);
        if ((envelope.flags & endStreamFlag) === endStreamFlag) {
          const end = JSON.parse(text) as { error?: ConnectErrorJson; metadata?: Record<string, string[]> };
          if (end.error !== undefined) {
            if (!opened) {
              // A stream refused before its first message (a rate limit, say) carries its metadata here.
              const metadata = endStreamHeaders(end.metadata);
              relayHeaders(metadata, res);
              this.#sendConnectError(end.error, requestedStatus(metadata) === undefined ? response.header : metadata, out);
              return;
            }
            out.write(sseData(JSON.stringify({ type: "error", code: end.error.code, message: boundedMessage(end.error.message ?? "") })));
          }
          break;
        }
        if (!opened) {
          out.openEventStream();
          opened = true;
          keepalive = setInterval(() => out.write(SSE_KEEPALIVE), KEEPALIVE_MS);
          keepalive.unref();
        }
        // Waiting for a slow reader here lets the stream's handler see backpressure (and bound its own queue)
        // instead of the socket buffering without limit.
        if (!out.write(sseData(text))) await out.drained();
      }
      if (!opened) out.openEventStream();
      out.end();
    } finally {
      if (keepalive !== undefined) clearInterval(keepalive);
    }
  }
}
