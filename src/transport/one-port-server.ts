// Serves HTTP/1.1 and cleartext HTTP/2 on one socket: the first bytes of a connection pick the protocol. Every
// connection is bounded in time: its first bytes and HTTP/1.1 headers must arrive promptly, and idle connections close.
// Closing drains: no new connection or request is taken, requests in progress finish within a grace period.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export type RequestListener = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/**
 * How much an HTTP/2 session may hold (MB), answers queued for a client that has not read them yet included. Past
 * it Node refuses new streams (ENHANCE_YOUR_CALM, which gRPC clients report as RESOURCE_EXHAUSTED), and after 100
 * refusals in a session's life it closes the session with every call on it (INTERNAL). Node's default, 10 MB, is
 * reached by a few multi-megabyte answers (an activity export, /metrics) in flight on one gRPC connection.
 */
const H2_SESSION_MEMORY_MB = 64;

export interface ConnectionTimeouts {
  /** A connection's first bytes (enough to pick the protocol) and an HTTP/1.1 request's headers must arrive within this. */
  readonly headersTimeoutMs: number;
  /** A whole HTTP/1.1 request must arrive within this. */
  readonly requestTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection between requests, or an HTTP/2 session with no open stream, closes after this. */
  readonly idleTimeoutMs: number;
}

export interface DrainOptions {
  /** Requests in progress may finish within this; then every connection still open is cut. 0 cuts at once. */
  readonly graceMs: number;
  /** Runs once no new connection or request is taken: ends long-lived streams, so that their connections close. */
  readonly onDraining?: () => void;
}

export interface OnePortServer {
  readonly port: number;
  /**
   * Drains, then resolves once every connection is closed: the listener closes at once (new connections are
   * refused), idle connections and connections still sending a request's headers close, a request arriving on an
   * open connection meanwhile answers 503 with `connection: close`, HTTP/2 sessions get GOAWAY; requests in progress
   * finish — for at most `graceMs` — each connection closing after its last one.
   */
  close(options?: DrainOptions): Promise<void>;
}

/** The answer to a request that arrives while the server drains. */
const SHUTTING_DOWN_BODY = JSON.stringify({ code: "unavailable", message: "the server is shutting down; retry shortly", details: [] });

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
  const h1 = http.createServer({
    keepAliveTimeout: timeouts.idleTimeoutMs,
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    connectionsCheckingInterval: checkingIntervalMs(timeouts),
  });
  // Node starts enforcing headersTimeout and requestTimeout when the server emits "listening"; this one never listens
  // (connections are handed to it below), so it is told here.
  h1.emit("listening");
  let draining = false;
  /** HTTP/1.1 connections, each with the responses in progress on it (one, or several when pipelined). */
  const h1Busy = new Map<net.Socket, Set<http.ServerResponse>>();
  // Counts each HTTP/1.1 request from the moment its headers are parsed until its response closes: while the server
  // drains, a connection closes after its last one.
  const tracked: RequestListener = (req, res) => {
    if (draining) {
      refuseWhileDraining(res);
      return;
    }
    if (res instanceof http.ServerResponse) {
      const socket = req.socket as net.Socket;
      const busy = h1Busy.get(socket);
      if (busy !== undefined) {
        busy.add(res);
        res.once("close", () => {
          busy.delete(res);
          if (draining && busy.size === 0) socket.end();
        });
      }
    }
    listener(req, res);
  };
  h1.on("request", tracked);
  const h2 = http2.createServer({ maxSessionMemory: H2_SESSION_MEMORY_MB }, tracked);
  const sockets = new Set<net.Socket>();
  /** Connections handed to HTTP/2: their sessions drain them. */
  const h2Sockets = new WeakSet<net.Socket>();
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
        h2Sockets.add(socket);
        h2.emit("connection", socket);
      } else {
        h1Busy.set(socket, new Set());
        socket.once("close", () => h1Busy.delete(socket));
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
    async close(options = { graceMs: 0 }) {
      draining = true;
      // Stops listening now; resolves once the last connection is closed.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        const busy = h1Busy.get(socket);
        if (busy !== undefined && busy.size > 0) {
          // Node then closes the connection after this response, instead of keeping it alive for another.
          for (const res of busy) if (!res.headersSent) res.setHeader("connection", "close");
        } else if (!h2Sockets.has(socket)) {
          // Idle, still sending a request's headers, or still picking its protocol: no request of it is in progress.
          socket.destroy();
        }
      }
      options.onDraining?.();
      const cut = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, options.graceMs);
      try {
        await closed;
      } finally {
        clearTimeout(cut);
        // Stops the timeout checks started above; the server itself was never listening, which close() reports.
        h1.close(() => undefined);
      }
    },
  };
}

function refuseWhileDraining(res: http.ServerResponse | http2.Http2ServerResponse): void {
  const headers: Record<string, string> = { "content-type": "application/json", "content-length": String(Buffer.byteLength(SHUTTING_DOWN_BODY)) };
  // HTTP/2 forbids the header; its session is already closing (GOAWAY).
  if (res instanceof http.ServerResponse) headers["connection"] = "close";
  res.writeHead(503, headers);
  res.end(SHUTTING_DOWN_BODY);
}
