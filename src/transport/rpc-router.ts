// Builds the Connect router (gRPC, gRPC-Web and Connect) and the Node request listener that puts the
// HTTP/JSON gateway behind it for every path that is not an RPC path.
import { createConnectRouter, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { Logger } from "../platform/logger.js";
import type { HttpGateway } from "./gateway/gateway.js";
import type { RequestListener } from "./one-port-server.js";

export function createRouter(interceptors: Interceptor[], maxRequestBytes: number): ConnectRouter {
  return createConnectRouter({
    interceptors,
    readMaxBytes: maxRequestBytes,
    // Unknown JSON fields are errors, as on the HTTP/JSON routes; responses use proto (snake_case) names and
    // include default values so every documented field is present.
    jsonOptions: { ignoreUnknownFields: false, useProtoFieldName: true, alwaysEmitImplicit: true },
  });
}

export function requestListener(router: ConnectRouter, gateway: HttpGateway, logger: Logger): RequestListener {
  const rpcPaths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0] ?? "";
    const handler = rpcPaths.get(path);
    if (handler === undefined) {
      void gateway.handle(req, res);
      return;
    }
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((e: unknown) => logger.warn({ err: e, rpc: path }, "rpc response aborted"));
  };
}
