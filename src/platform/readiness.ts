// Tracks start-up work so /readyz can answer 503 with the current reason until every step is done, and the
// shutdown that follows a SIGTERM, so load balancers stop routing to a server that is draining.

/** Reasons in the order the server's life reports them. */
export type NotReadyReason = "starting" | "acl_rebuild_in_progress" | "sparse_prewarm_in_progress" | "shutting_down";

export class Readiness {
  #reason: NotReadyReason | undefined = "starting";

  get ready(): boolean {
    return this.#reason === undefined;
  }

  get reason(): NotReadyReason | undefined {
    return this.#reason;
  }

  /** True while start-up work runs: requests are refused until it ends. A draining server is not starting. */
  get starting(): boolean {
    return this.#reason !== undefined && this.#reason !== "shutting_down";
  }

  enter(reason: NotReadyReason): void {
    this.#reason = reason;
  }

  markReady(): void {
    if (this.#reason !== "shutting_down") this.#reason = undefined;
  }

  /** From now on /readyz answers 503 `shutting_down`, for good. */
  shutDown(): void {
    this.#reason = "shutting_down";
  }
}
