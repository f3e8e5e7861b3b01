// Builds the Connect router (gRPC, gRPC-Web and Connect) and the Node request listener that puts the
// HTTP/JSON gateway behind it for every path that is not an RPC path.
import { Code, createConnectRouter, createContextValues, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { boundedMessage } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { Admitting } from "./call-admission.js";
import { admittedCallKey, transportOf } from "./call-context.js";
import type { HttpGateway } from "./gateway/gateway.js";
import type { RequestListener } from "./one-port-server.js";
import { abandonBody } from "./request-body.js";
import { guardRpcRequest } from "./rpc-request-guard.js";
import { rpcRefusal } from "./rpc-refusal.js";

export function createRouter(interceptors: Interceptor[], maxRequestBytes: number): ConnectRouter {
  return createConnectRouter({
    interceptors,
    readMaxBytes: maxRequestBytes,
    // Unknown JSON fields are errors, as on the HTTP/JSON routes; responses use proto (snake_case) names and
    // include default values so every documented field is present.
    jsonOptions: { ignoreUnknownFields: false, useProtoFieldName: true, alwaysEmitImplicit: true },
  });
}

/**
 * The gRPC spec percent-encodes only bytes outside printable ASCII (and `%`) in `grpc-message`; connect-node encodes
 * like encodeURIComponent, and clients that decode per spec (grpc-js uses decodeURI) then show `%3A` for `:`.
 * Re-encoding the message per spec makes error messages read the same in every client. The message is also cut to a
 * bounded length: a trailer larger than the client accepts resets the stream, and the caller would see no message.
 */
function specEncode(message: string): string {
  let decoded: string;
  try {
    decoded = decodeURIComponent(message);
  } catch {
    decoded = message;
  }
  return Array.from(Buffer.from(boundedMessage(decoded), "utf8"))
    .map((byte) => (byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
}

function fixGrpcMessage(headers: Headers | undefined): void {
  const message = headers?.get("grpc-message");
  if (message !== null && message !== undefined) headers?.set("grpc-message", specEncode(message));
}

function withSpecGrpcMessage(uRes: UniversalServerResponse): UniversalServerResponse {
  fixGrpcMessage(uRes.header);
  const body = uRes.body;
  if (body === undefined || uRes.trailer === undefined) return uRes;
  const trailer = uRes.trailer;
  return {
    ...uRes,
    body: (async function* () {
      yield* body;
      // Trailers are complete once the body is.
      fixGrpcMessage(trailer);
    })(),
  };
}

/** A listener served at one exact path of the main port beside the RPCs and the gateway (`/mcp`, `/openapi.json`). */
export interface Mount {
  readonly path: string;
  readonly listener: RequestListener;
}

export function requestListener(router: ConnectRouter, gateway: HttpGateway, logger: Logger, mounts: readonly Mount[] = [], admitting?: Admitting): RequestListener {
  const rpcPaths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const mounted = new Map(mounts.map((m) => [m.path, m.listener]));
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0] ?? "";
    const mount = mounted.get(path);
    if (mount !== undefined) {
      mount(req, res);
      return;
    }
    const handler = rpcPaths.get(path);
    if (handler === undefined) {
      void gateway.handle(req, res);
      return;
    }
    const started = process.hrtime.bigint();
    const admitted = admitting?.admission.admit(handler.service.typeName, req.headers["authorization"]);
    const write = (uRes: UniversalServerResponse): void => {
      universalResponseToNodeResponse(withSpecGrpcMessage(uRes), res).catch((e: unknown) => logger.warn({ err: e, rpc: path }, "rpc response aborted"));
    };
    if (admitted?.refusal !== undefined) {
      abandonBody(req, res);
      const contentType = req.headers["content-type"];
      write(rpcRefusal(contentType, { code: Code.ResourceExhausted, message: admitted.refusal, fields: admitted.fields }));
      const call = { method: handler.method, transport: transportOf(contentType ?? null, false), keyId: admitted.principal.keyId, started };
      admitting?.record(call, Code.ResourceExhausted, { message: admitted.refusal });
      return;
    }
    const contextValues = admitted === undefined ? undefined : createContextValues().set(admittedCallKey, admitted);
    const uReq = guardRpcRequest(universalRequestFromNodeRequest(req, res, undefined, contextValues), handler.method, req, res, gateway.maxBodyBytes);
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(withSpecGrpcMessage(uRes), res))
      .catch((e: unknown) => logger.warn({ err: e, rpc: path }, "rpc response aborted"));
  };
}
