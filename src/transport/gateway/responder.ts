// A small writer over Node's HTTP/1.1 and HTTP/2 compatibility responses, so the gateway needs no branches.
import type http from "node:http";
import type http2 from "node:http2";

export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

export class HttpResponder {
  readonly #res: NodeResponse;

  constructor(res: NodeResponse) {
    this.#res = res;
  }

  get closed(): boolean {
    return this.#res.writableEnded || this.#res.destroyed;
  }

  send(status: number, contentType: string, body: string | Uint8Array): void {
    if (this.#res.headersSent) return;
    const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
    this.#res.writeHead(status, { "content-type": contentType, "content-length": String(bytes.byteLength) });
    this.#res.end(bytes);
  }

  /** Starts a text/event-stream response. */
  openEventStream(): void {
    this.#res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    });
    if ("flushHeaders" in this.#res) this.#res.flushHeaders();
  }

  /** Writes a chunk; false when the socket's buffer is full and the caller should await `drained`. */
  write(chunk: string): boolean {
    return this.closed || (this.#res as http.ServerResponse).write(chunk);
  }

  /** Resolves once the buffered output has been flushed, or the response has closed. */
  drained(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const res = this.#res as http.ServerResponse;
    return new Promise((resolve) => {
      const done = (): void => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.once("drain", done);
      res.once("close", done);
    });
  }

  end(): void {
    if (!this.closed) this.#res.end();
  }

  onClose(listener: () => void): void {
    this.#res.on("close", listener);
  }
}
