// Reads request bodies for the gateway and the RPC handlers so that a body refused part-way (too large, undecodable,
// or not wanted at all) never leaves an HTTP/1.1 connection stuck with unread bytes ahead of the next request, nor
// an HTTP/2 stream open after its answer.
import type http from "node:http";
import http2 from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";

export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * How much of a refused body is read and thrown away: over HTTP/1.1 to keep the connection for the next request
 * (beyond this, or when the length is not declared, the answer says `Connection: close` and the connection closes
 * after it); over HTTP/2 to let the stream end (beyond this it is reset once answered).
 */
export const DRAIN_LIMIT_BYTES = 1024 * 1024;

function declaredLength(req: NodeRequest): number | undefined {
  const raw = req.headers["content-length"];
  const length = typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : NaN;
  return Number.isSafeInteger(length) ? length : undefined;
}

function isHttp1(req: NodeRequest): req is http.IncomingMessage {
  return req.httpVersionMajor < 2;
}

/** Whether an HTTP/1.1 request has body bytes still to come: it declares a body and has not been read to its end. */
function bodyPending(req: http.IncomingMessage): boolean {
  const declaresBody = req.headers["transfer-encoding"] !== undefined || (declaredLength(req) ?? 0) > 0;
  return declaresBody && !req.complete && !req.readableEnded && !req.destroyed;
}

/** The answer to this request closes its HTTP/1.1 connection, so no unread body stays ahead of a next request. */
function closeAfterAnswer(req: http.IncomingMessage, res: NodeResponse): void {
  if (!res.headersSent) res.setHeader("connection", "close");
  else if (res.writableFinished) req.socket.destroy();
  else res.once("finish", () => req.socket.destroy());
}

const abandoned = new WeakSet<NodeRequest>();

/**
 * Over HTTP/2 an answered stream stays open until the client has sent all of its body, and a client held back by
 * flow control (the server stopped reading) never does: such streams piled up on a long-lived gRPC connection until
 * its session failed, with every call in flight on it. So the rest of the body is read and discarded; past
 * DRAIN_LIMIT_BYTES the stream is instead reset with NO_ERROR once the answer is out, as RFC 9113 §8.1 allows.
 */
function drainStream(req: http2.Http2ServerRequest, res: NodeResponse): void {
  const stream = req.stream;
  if (req.readableEnded || stream.closed || stream.destroyed) return;
  let drained = 0;
  const reset = (): void => {
    if (!stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  };
  req.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained <= DRAIN_LIMIT_BYTES) return;
    req.pause();
    if (res.writableFinished) reset();
    else res.once("finish", reset);
  });
  req.resume();
}

/**
 * Gives up on the rest of a body, `consumed` bytes into it. Over HTTP/1.1 a short remainder is drained (read and
 * discarded) so the connection serves the next request; a long or undeclared one closes the connection after the
 * answer. Over HTTP/2 only the stream is concerned: its rest is drained, or past the limit the stream reset.
 */
export function abandonBody(req: NodeRequest, res: NodeResponse, consumed = 0): void {
  if (abandoned.has(req)) return;
  if (!isHttp1(req)) {
    abandoned.add(req);
    drainStream(req, res);
    return;
  }
  if (!bodyPending(req)) return;
  abandoned.add(req);
  const declared = declaredLength(req);
  if (declared === undefined || declared - consumed > DRAIN_LIMIT_BYTES) closeAfterAnswer(req, res);
  // Flowing without a reader discards the bytes; Node then parses the next request (or closes, as decided above).
  req.resume();
}

/** True when the declared length alone says the body is over `maxBytes`: it need not be read at all. */
export function declaredTooLarge(req: NodeRequest, maxBytes: number): boolean {
  const declared = declaredLength(req);
  return declared !== undefined && declared > maxBytes;
}

/**
 * The body's chunks. Stopping early (the reader returns or throws) does not destroy the request, which would leave
 * an HTTP/1.1 connection neither answered nor closed: it hands the rest to `abandonBody`.
 */
export async function* bodyChunks(req: NodeRequest, res: NodeResponse): AsyncGenerator<Uint8Array> {
  let consumed = 0;
  let ended = false;
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      consumed += chunk.length;
      yield chunk;
    }
    ended = true;
  } catch (e: unknown) {
    // The client left before its body ended (a stream reset at its deadline, a dropped connection): the call is
    // cancelled, not a server fault to log as INTERNAL nor a malformed body to answer INVALID_ARGUMENT.
    const code = (e as NodeJS.ErrnoException | undefined)?.code;
    if (code === "ERR_STREAM_PREMATURE_CLOSE" || code === "ECONNRESET") {
      throw new ConnectError("the client closed the request before its body ended", Code.Canceled, undefined, undefined, e);
    }
    throw e;
  } finally {
    if (!ended) abandonBody(req, res, consumed);
  }
}

/**
 * The whole body, or "too_large" as soon as it is known to exceed `maxBytes` (by its declared length or by the bytes
 * read so far); the rest is then drained or the connection closed after the answer, as `abandonBody` decides.
 */
export async function readBoundedBody(req: NodeRequest, res: NodeResponse, maxBytes: number): Promise<Buffer | "too_large"> {
  if (declaredTooLarge(req, maxBytes)) {
    abandonBody(req, res);
    return "too_large";
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(req, res)) {
    size += chunk.byteLength;
    if (size > maxBytes) return "too_large";
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
