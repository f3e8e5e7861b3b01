// Forwards console API calls to the data plane over loopback HTTP, acting with the session's key. Only what the data
// plane needs goes through: never the browser's cookies or an Authorization header of its own.
import http from "node:http";
import { pipeline } from "node:stream/promises";
import { readBoundedBody } from "../transport/request-body.js";
import { sendJson, tooLarge } from "./console-http.js";

export interface DataPlaneAddress {
  /** The data plane's host setting; a wildcard address is reached on loopback. */
  readonly host: string;
  readonly port: number;
}

/** How much of a data-plane answer the console reads for itself (health's storage statistics). */
const MAX_OWN_READ_BYTES = 1024 * 1024;

function loopbackHost(host: string): string {
  if (host === "" || host === "0.0.0.0" || host === "::" || host === "[::]") return "127.0.0.1";
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

export class ApiProxy {
  readonly #host: string;
  readonly #port: number;
  readonly #maxRequestBytes: number;
  /** Keeps loopback connections for reuse; destroyed on close so none outlives the console. */
  readonly #agent = new http.Agent({ keepAlive: true });

  constructor(address: DataPlaneAddress, maxRequestBytes: number) {
    this.#host = loopbackHost(address.host);
    this.#port = address.port;
    this.#maxRequestBytes = maxRequestBytes;
  }

  /**
   * Sends the request to `targetPath` (path and query) on the data plane and relays its status, content type and
   * body as they come, so server streams (SSE) stream. A body over the data plane's own limit answers 413 here.
   */
  async forward(req: http.IncomingMessage, res: http.ServerResponse, apiKey: string, targetPath: string): Promise<void> {
    const method = req.method ?? "GET";
    const hasBody = method !== "GET" && method !== "HEAD";
    const body = hasBody ? await readBoundedBody(req, res, this.#maxRequestBytes) : Buffer.alloc(0);
    if (body === "too_large") {
      tooLarge(res, this.#maxRequestBytes);
      return;
    }
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${apiKey}` };
    const accept = req.headers.accept;
    if (accept !== undefined) headers["accept"] = accept;
    if (hasBody) {
      // The data plane reads HTTP/JSON; whatever the browser declared, the body goes as JSON.
      headers["content-type"] = "application/json";
      headers["content-length"] = String(body.byteLength);
    }
    const upstream = http.request({ agent: this.#agent, host: this.#host, port: this.#port, method, path: targetPath, headers });
    // A browser that leaves (a closed page, an ended event stream) ends the data-plane call too.
    const onClientGone = (): void => {
      if (!res.writableFinished) upstream.destroy();
    };
    res.once("close", onClientGone);
    let answer: http.IncomingMessage;
    try {
      answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
        upstream.once("response", resolve);
        // Kept for the whole call: an error after the answer began must not go unheard (pipeline reports it).
        upstream.on("error", reject);
        upstream.end(body);
      });
    } catch {
      res.off("close", onClientGone);
      sendJson(res, 502, { error: "data plane unavailable" });
      return;
    }
    const relayed: http.OutgoingHttpHeaders = { "content-type": answer.headers["content-type"] ?? "application/json" };
    if (answer.headers["content-length"] !== undefined) relayed["content-length"] = answer.headers["content-length"];
    res.writeHead(answer.statusCode ?? 502, relayed);
    if ("flushHeaders" in res) res.flushHeaders();
    try {
      await pipeline(answer, res);
    } catch {
      // Either side closed mid-answer; the pipeline has already torn both down.
    } finally {
      res.off("close", onClientGone);
    }
  }

  /** GETs `targetPath` with the key and returns the parsed JSON of a 200 answer, or null for any other answer. */
  async getJson(targetPath: string, apiKey: string): Promise<unknown> {
    return new Promise((resolve) => {
      const upstream = http.get({ agent: this.#agent, host: this.#host, port: this.#port, path: targetPath, headers: { authorization: `Bearer ${apiKey}` } }, (answer) => {
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_OWN_READ_BYTES) upstream.destroy();
          else chunks.push(chunk);
        });
        // Cut short (too large, or the data plane went away): no answer. After "end" this is a no-op.
        answer.on("close", () => resolve(null));
        answer.on("error", () => resolve(null));
        answer.on("end", () => {
          if (answer.statusCode !== 200) return resolve(null);
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown);
          } catch {
            resolve(null);
          }
        });
      });
      upstream.on("error", () => resolve(null));
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}
