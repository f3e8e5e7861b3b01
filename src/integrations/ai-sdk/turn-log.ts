// The middleware's memory of its recent turns: for each, the entries its context held and the entries it stored,
// so that feedback can credit them. Bounded: only the latest MAX_TURNS turns are kept.
export const MAX_TURNS = 100;

export interface LoggedTurn {
  readonly turnId: string;
  /** Entries of the context injected into the call. */
  readonly contextIds: readonly string[];
  /** The turn's own entries once stored; [] when recording is off or failed (the failure was reported then). */
  readonly stored: Promise<readonly string[]>;
}

export class TurnLog {
  readonly #turns = new Map<string, LoggedTurn>();
  #latest: string | undefined;

  add(turn: LoggedTurn): void {
    this.#turns.set(turn.turnId, turn);
    this.#latest = turn.turnId;
    // A Map iterates in insertion order: the first key is the oldest turn.
    for (const oldest of this.#turns.keys()) {
      if (this.#turns.size <= MAX_TURNS) break;
      this.#turns.delete(oldest);
    }
  }

  get(turnId: string): LoggedTurn | undefined {
    return this.#turns.get(turnId);
  }

  /** Id of the most recent model call, if any. */
  get latestTurnId(): string | undefined {
    return this.#latest;
  }
}
