// Serves HTTP/1.1 and cleartext HTTP/2 on one socket: the first bytes of a connection pick the protocol.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export type RequestListener = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface OnePortServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function listenOnePort(listener: RequestListener, port: number, host: string): Promise<OnePortServer> {
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, listener);
  const h2 = http2.createServer({}, listener);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });

  const server = net.createServer({ noDelay: true, pauseOnConnect: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, H2_PREFACE.length);
      const couldBeH2 = head.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      // Wait for enough bytes to tell "PRI * HTTP/2.0" from an HTTP/1.1 request line.
      if (couldBeH2 && n < H2_PREFACE.length) return;
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
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
