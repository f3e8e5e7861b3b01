// Opens each authenticated call's write scope (whose data it writes: storage/write-scope.ts) and, in clustered mode,
// does what the cluster asks of a call: it is forwarded when this node does not serve its caller's shard, it waits
// for the consistency token it carries, and its answer carries the token of what it wrote.
import { Code, ConnectError, type Interceptor, type StreamRequest, type StreamResponse, type Transport, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { isAdmin, principalKey } from "../../auth/principal.js";
import { currentWriteScope, inWriteScope } from "../../storage/write-scope.js";
import { COST_HEADER } from "../../platform/cost-meter.js";
import { CommandTooLarge, LogUnavailable, TooManyWaiters } from "../../cluster/replicated-transaction.js";
import { ClusterNode, GLOBAL_SHARD, MalformedToken, ReplicaBehind, ShardNotServed, formatToken, parseToken, type ConsistencyToken } from "../../cluster/cluster-node.js";

/** Request and response header of the consistency token (gRPC metadata of the same name). */
export const CONSISTENCY_TOKEN_HEADER = "engram-consistency-token";
/** Set on a call one node forwards to another: the second node never forwards it again. */
const FORWARDED_HEADER = "engram-forwarded-by";
/** Headers a forwarded call keeps: who calls, and what it must read. */
const FORWARDED_REQUEST_HEADERS = ["authorization", CONSISTENCY_TOKEN_HEADER] as const;
/** Transports to other nodes kept at once (one per node URL; a node that restarts on a new port adds one). */
const MAX_TRANSPORTS = 256;

/**
 * Before authentication: a call carrying a consistency token first waits for the token's global-shard position, where
 * users and API keys live, so that a key created on another node authenticates here at once (read-your-writes for
 * keys). The rest of the token is waited for after authentication.
 */
export function globalTokenInterceptor(cluster: ClusterNode | undefined): Interceptor {
  return (next) => async (req) => {
    const text = req.header.get(CONSISTENCY_TOKEN_HEADER);
    if (cluster !== undefined && text !== null && text.trim() !== "") {
      const position = parsed(text).get(GLOBAL_SHARD);
      if (position !== undefined) await waitFor(cluster, new Map([[GLOBAL_SHARD, position]]));
    }
    return next(req);
  };
}

export function clusterInterceptor(cluster: ClusterNode | undefined): Interceptor {
  const transports = new Map<string, Transport>();
  return (next) => async (req) => {
    const principal = req.contextValues.get(principalKey);
    if (principal === undefined) return next(req);
    // An admin's writes (users, keys, any owner's data it manages) go to the global shard, which every node holds.
    const owner = isAdmin(principal) ? undefined : principal.userId;
    if (cluster !== undefined) {
      const shard = cluster.shardOf({ owner });
      if (!cluster.serves(shard)) {
        if (req.header.get(FORWARDED_HEADER) !== null) throw unavailable(`node ${cluster.nodeId} does not serve shard ${shard} either (the shard map is changing); retry`);
        // Server streams are forwarded like unary calls (over HTTP/1.1, as Connect carries them); a client or
        // bidirectional stream must be made to a node of the shard.
        if (req.stream && req.method.methodKind !== "server_streaming") throw unavailable(`client streams of shard ${shard} must be made to a node that serves it`);
        const urls = cluster.nodesServing(shard);
        if (urls.length === 0) throw unavailable(`no node serving shard ${shard} is in the shard map`);
        // A node the map still lists may be down: the next one is tried.
        let failure: unknown;
        for (const url of urls) {
          let transport = transports.get(url);
          if (transport === undefined) {
            transport = createConnectTransport({ baseUrl: url, httpVersion: "1.1" });
            if (transports.size >= MAX_TRANSPORTS) transports.clear();
            transports.set(url, transport);
          }
          try {
            return req.stream ? await forwardStream(transport, req, cluster.nodeId) : await forward(transport, req, cluster.nodeId);
          } catch (e: unknown) {
            if (!(e instanceof ConnectError) || e.code !== Code.Unavailable) throw e;
            failure = e;
          }
        }
        throw failure;
      }
      const token = req.header.get(CONSISTENCY_TOKEN_HEADER);
      if (token !== null && token.trim() !== "") await waitFor(cluster, parsed(token));
    }
    return inWriteScope(owner, async () => {
      try {
        const res = await next(req);
        if (cluster !== undefined) {
          // A write answers with the positions it wrote at. Engram design: any other answer carries the position of
          // the caller's shard it was read at, so that a client passing on the last token it got never reads older
          // state on another node (the results of an ingest job it saw done, say).
          const written = currentWriteScope()?.written;
          const shard = cluster.shardOf({ owner });
          const token = written !== undefined && written.size > 0 ? written : new Map([[shard, cluster.readsReflect(shard)]]);
          if ([...token.values()].some((position) => position > 0)) res.header.set(CONSISTENCY_TOKEN_HEADER, formatToken(token));
        }
        return res;
      } catch (e: unknown) {
        if (e instanceof ShardNotServed || e instanceof LogUnavailable) throw unavailable(e.message);
        if (e instanceof CommandTooLarge) throw new ConnectError(e.message, Code.ResourceExhausted);
        throw e;
      }
    });
  };
}

function parsed(text: string): ConsistencyToken {
  try {
    return parseToken(text);
  } catch (e: unknown) {
    if (e instanceof MalformedToken) throw new ConnectError(`${CONSISTENCY_TOKEN_HEADER}: ${e.message}`, Code.InvalidArgument);
    throw e;
  }
}

async function waitFor(cluster: ClusterNode, token: ConsistencyToken): Promise<void> {
  try {
    await cluster.waitFor(token);
  } catch (e: unknown) {
    if (e instanceof ReplicaBehind || e instanceof TooManyWaiters) throw unavailable(e.message);
    throw e;
  }
}

/** The headers a call keeps when forwarded, and who forwarded it. */
function forwardedHeaders(req: UnaryRequest | StreamRequest, nodeId: string): Headers {
  const header = new Headers();
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = req.header.get(name);
    if (value !== null) header.set(name, value);
  }
  header.set(FORWARDED_HEADER, nodeId);
  return header;
}

/**
 * The other node's answer headers this node passes on: its consistency token and what the call cost there (the node
 * that did the work is the one that called the providers). The rest describe that node's own connection (HTTP/1.1
 * keep-alive, content type), which this node's protocol sets for itself.
 */
function relayedHeaders(from: Headers): Headers {
  const header = new Headers();
  for (const name of [CONSISTENCY_TOKEN_HEADER, COST_HEADER]) {
    const value = from.get(name);
    if (value !== null) header.set(name, value);
  }
  return header;
}

async function forward(transport: Transport, req: UnaryRequest, nodeId: string): Promise<UnaryResponse> {
  const res = await transport.unary(req.method, req.signal, undefined, forwardedHeaders(req, nodeId), req.message, req.contextValues);
  return { ...res, header: relayedHeaders(res.header), trailer: new Headers(), service: req.service, method: req.method } as UnaryResponse;
}

/** A server stream, relayed message by message from the node that serves it; cancelled with the caller's call. */
async function forwardStream(transport: Transport, req: StreamRequest, nodeId: string): Promise<StreamResponse> {
  const method = req.method as Parameters<Transport["stream"]>[0];
  const res = await transport.stream(method, req.signal, undefined, forwardedHeaders(req, nodeId), req.message, req.contextValues);
  return { ...res, header: relayedHeaders(res.header), trailer: new Headers(), service: req.service, method: req.method } as StreamResponse;
}

function unavailable(message: string): ConnectError {
  return new ConnectError(message, Code.Unavailable);
}
