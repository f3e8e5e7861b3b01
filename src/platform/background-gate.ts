// Lets tests hold background workers (ingest jobs, run purges) between two units of work, so that a test-only fault
// injected into one request's writes is not consumed by background writes. Open (the default) it costs one check.

export class BackgroundGate {
  #held: Promise<void> | undefined;
  #release: (() => void) | undefined;

  /** Holds workers at their next unit of work until the returned function is called. */
  hold(): () => void {
    if (this.#held === undefined) this.#held = new Promise<void>((resolve) => (this.#release = resolve));
    return () => {
      this.#release?.();
      this.#held = undefined;
      this.#release = undefined;
    };
  }

  /** Resolves at once unless held; then when released. */
  async pass(): Promise<void> {
    while (this.#held !== undefined) await this.#held;
  }
}
