// An HTTP/JSON client of Engram on node:http with a keep-alive socket pool of a chosen size, for load generation:
// lighter on the client's CPU than fetch, and the socket count is explicit (one per concurrent client).
import http from "node:http";
import { ApiError } from "./api.mjs";

/**
 * A client holding up to `sockets` keep-alive connections to the server (requests beyond that queue in the client).
 * `post(route, body)` resolves with the parsed JSON (or the text) of a 2xx answer and rejects with ApiError for any other status,
 * with the socket error (ECONNRESET, …) on a transport failure, and with a TimeoutError when no answer came within
 * `timeoutMs` of the call, time spent queued for a socket included (a stalled server fails every call on time).
 */
export function httpClient(server, { sockets = 64, timeoutMs = 30_000 } = {}) {
  // `timeout` closes a socket left idle for 5 s (as Node's global agent does). Without it, Node 20's Agent also ignores
  // the server's `Keep-Alive: timeout=65` and keeps idle sockets until the server closes them: a request sent on one
  // just as the server closes it (more likely while this process is busy) fails with ECONNRESET. Seen in a soak; see
  // "Load and soak" in BENCHMARKS.md.
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, timeout: 5000 });
  const url = new URL(server.base);
  const authorization = `Bearer ${server.key}`;
  const send = (method, route, body) =>
    new Promise((resolve, reject) => {
      let timer;
      const settle = (fn) => (value) => {
        clearTimeout(timer);
        fn(value);
      };
      resolve = settle(resolve);
      reject = settle(reject);
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = { authorization };
      if (payload !== undefined) {
        headers["content-type"] = "application/json";
        headers["content-length"] = Buffer.byteLength(payload);
      }
      const req = http.request({ agent, host: url.hostname, port: url.port, method, path: route, headers }, (res) => {
        const chunks = [];
        res.on("data", (chunk) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode < 200 || res.statusCode >= 300) return reject(new ApiError(route, res.statusCode, text));
          if (text === "" || !(res.headers["content-type"] ?? "").includes("json")) return resolve(text === "" ? {} : text);
          try {
            resolve(JSON.parse(text));
          } catch (e) {
            reject(e);
          }
        });
      });
      timer = setTimeout(() => {
        const e = new Error(`${route}: no answer within ${timeoutMs} ms`);
        e.name = "TimeoutError";
        req.destroy(e);
      }, timeoutMs);
      req.on("error", reject);
      req.end(payload);
    });
  return {
    post: (route, body) => send("POST", route, body),
    get: (route) => send("GET", route),
    /** Sockets open now (busy and idle), to check that the pool is the size it was asked to be. */
    openSockets: () => [...Object.values(agent.sockets), ...Object.values(agent.freeSockets)].reduce((n, list) => n + (list?.length ?? 0), 0),
    close: () => agent.destroy(),
  };
}
