// A bounded queue between a publisher that never waits and one streaming reader: it ends the reader with an error
// rather than grow without bound.
import type { ConnectError } from "@connectrpc/connect";

export class DeliveryQueue<T> {
  readonly #limit: number;
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #failure: ConnectError | undefined;
  #closed = false;
  /** Set by `finish`: the reader takes what is queued, then its stream ends. */
  #ending = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues an item; when the reader is `limit` items behind, the queue is emptied and ends with `overflow()`. */
  push(item: T, overflow: () => ConnectError): void {
    if (this.#closed || this.#ending) return;
    if (this.#items.length >= this.#limit) {
      this.#failure = overflow();
      this.#items.length = 0;
      this.close();
      return;
    }
    this.#items.push(item);
    this.#wake?.();
  }

  /**
   * Queues `last` (beyond the limit if need be) as the final item: the reader takes everything queued, then `last`,
   * then its stream ends normally. Nothing pushed afterwards is queued. Does nothing once the queue is closed.
   */
  finish(last: T): void {
    if (this.#closed || this.#ending) return;
    this.#ending = true;
    this.#items.push(last);
    this.#wake?.();
  }

  /** Ends the reader's stream normally (after the error, if one was set). Idempotent. */
  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  /** Queued and future items until the signal aborts or the queue closes; throws the overflow error if any. */
  async *drain(signal: AbortSignal): AsyncGenerator<T> {
    const onAbort = (): void => this.#wake?.();
    signal.addEventListener("abort", onAbort);
    try {
      for (;;) {
        if (this.#failure !== undefined) throw this.#failure;
        if (signal.aborted || this.#closed) return;
        const next = this.#items.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (this.#ending) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}
