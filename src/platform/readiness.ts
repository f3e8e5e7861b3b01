// Tracks start-up work so /readyz can answer 503 with the current reason until every step is done.

/** Reasons in the order start-up reports them. */
export type NotReadyReason = "starting" | "acl_rebuild_in_progress" | "sparse_prewarm_in_progress";

export class Readiness {
  #reason: NotReadyReason | undefined = "starting";

  get ready(): boolean {
    return this.#reason === undefined;
  }

  get reason(): NotReadyReason | undefined {
    return this.#reason;
  }

  enter(reason: NotReadyReason): void {
    this.#reason = reason;
  }

  markReady(): void {
    this.#reason = undefined;
  }
}
