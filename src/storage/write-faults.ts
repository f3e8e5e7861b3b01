// A test-only hook that makes the n-th LMDB write from now throw, so tests can prove a failure at any step of any
// write path leaves nothing behind. Disarmed (the default) it costs one comparison per write.

export class InjectedWriteFault extends Error {
  constructor(method: string) {
    super(`injected write fault at LMDB ${method}`);
  }
}

export class WriteFaults {
  #countdown = 0;
  /** Writes seen since the last `failAt`, whether or not one failed: tests learn a route's write count from it. */
  #seen = 0;

  /** Makes the `nth` write from now (1 = the next one) throw once; 0 disarms. */
  failAt(nth: number): void {
    this.#countdown = nth;
    this.#seen = 0;
  }

  get writesSeen(): number {
    return this.#seen;
  }

  get armed(): boolean {
    return this.#countdown > 0;
  }

  /** Called before every LMDB write; throws when the armed write is reached. */
  beforeWrite(method: string): void {
    this.#seen++;
    if (this.#countdown === 0) return;
    this.#countdown--;
    if (this.#countdown === 0) throw new InjectedWriteFault(method);
  }
}
