// Serves HTTP/1.1 and cleartext HTTP/2 on one socket: the first bytes of a connection pick the protocol. Every
// connection is bounded in time: its first bytes and HTTP/1.1 headers must arrive promptly, and idle connections close.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export type RequestListener = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface ConnectionTimeouts {
  /** A connection's first bytes (enough to pick the protocol) and an HTTP/1.1 request's headers must arrive within this. */
  readonly headersTimeoutMs: number;
  /** A whole HTTP/1.1 request must arrive within this. */
  readonly requestTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection between requests, or an HTTP/2 session with no open stream, closes after this. */
  readonly idleTimeoutMs: number;
}

export interface OnePortServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * How often Node checks HTTP/1.1 requests against headersTimeout and requestTimeout. Its default (30 s) would let a
 * stalled request outlive a short timeout by that much; a quarter of the shorter timeout, within [25 ms, 1 s], does not.
 */
function checkingIntervalMs(timeouts: ConnectionTimeouts): number {
  return Math.min(1000, Math.max(25, Math.floor(Math.min(timeouts.headersTimeoutMs, timeouts.requestTimeoutMs) / 4)));
}

/**
 * Closes (GOAWAY) an HTTP/2 session once it has had no open stream for idleMs. A stream in progress — a long-lived
 * server stream included — keeps the session open however quiet it is.
 */
function closeWhenIdle(session: http2.ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    timer = setTimeout(() => session.close(), idleMs);
    timer.unref();
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      open--;
      if (open === 0 && !session.closed && !session.destroyed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

export async function listenOnePort(listener: RequestListener, port: number, host: string, timeouts: ConnectionTimeouts): Promise<OnePortServer> {
  const h1 = http.createServer(
    {
      keepAliveTimeout: timeouts.idleTimeoutMs,
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalMs(timeouts),
    },
    listener,
  );
  // Node starts enforcing headersTimeout and requestTimeout when the server emits "listening"; this one never listens
  // (connections are handed to it below), so it is told here.
  h1.emit("listening");
  const h2 = http2.createServer({}, listener);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    closeWhenIdle(session, timeouts.idleTimeoutMs);
  });

  const server = net.createServer({ noDelay: true, pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    // A connection that never sends enough bytes to pick a protocol is closed, not held open.
    const sniffTimer = setTimeout(() => socket.destroy(), timeouts.headersTimeoutMs);
    sniffTimer.unref();
    socket.once("close", () => clearTimeout(sniffTimer));
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const couldBeH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      // Wait for enough bytes to tell "PRI * HTTP/2.0" from an HTTP/1.1 request line.
      if (couldBeH2 && n < H2_PREFACE.length) return;
      clearTimeout(sniffTimer);
      socket.off("data", onData);
      socket.pause();
      socket.unshift(head);
      if (couldBeH2) {
        // The HTTP/2 session reads the socket's handle itself, starting with the bytes put back above.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.resume();
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = typeof address === "object" && address !== null ? address.port : port;

  return {
    port: boundPort,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      h1.closeIdleConnections();
      // Stops the timeout checks started above; the server itself was never listening, which close() reports.
      h1.close(() => undefined);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
