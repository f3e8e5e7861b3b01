// The run link record: a child run linked under a parent run of the same owner, and its decoder.
import { openRecord } from "../storage/record-codec.js";

export const RUN_LINK_RECORD_VERSION = 1;

export interface RunLinkRecord {
  readonly v: typeof RUN_LINK_RECORD_VERSION;
  readonly owner: number;
  readonly runId: string;
  readonly linkedRunId: string;
  /** Unix milliseconds; orders a run's links ("link order"). */
  readonly linkedAt: number;
}

export function decodeRunLink(key: unknown, value: unknown): RunLinkRecord {
  const r = openRecord("run_links", key, value, RUN_LINK_RECORD_VERSION);
  return {
    v: RUN_LINK_RECORD_VERSION,
    owner: r.integer("owner"),
    runId: r.string("runId"),
    linkedRunId: r.string("linkedRunId"),
    linkedAt: r.number("linkedAt"),
  };
}
