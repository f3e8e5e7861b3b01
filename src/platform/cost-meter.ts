// What a request (or a background job) spent on external providers — calls, tokens and time, per provider kind — kept
// in a meter the provider clients find through AsyncLocalStorage, so no signature between the RPC and the HTTP call
// has to carry it.
//
// The transport's cost interceptor opens a meter per authenticated RPC; background work (an ingest job) opens its own
// for the key that started it. Every charge also goes at once to the key's Prometheus totals (the meter's sink), so
// work that outlives its request is still counted there.
import { AsyncLocalStorage } from "node:async_hooks";

/** The provider kinds Engram may call; the embedded default (word vectors, no LLM) calls neither. */
export const PROVIDERS = ["llm", "embeddings"] as const;
export type Provider = (typeof PROVIDERS)[number];

/** One provider's share of a cost. `ms` is wall time spent waiting for the provider, retries and failures included. */
export interface ProviderCost {
  readonly calls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly ms: number;
}

export type Cost = Readonly<Record<Provider, ProviderCost>>;

/** Receives every charge as it is made (the per-key metrics). */
export type CostSink = (provider: Provider, spent: ProviderCost) => void;

const NOTHING: ProviderCost = { calls: 0, inputTokens: 0, outputTokens: 0, ms: 0 };

export const ZERO_COST: Cost = { llm: NOTHING, embeddings: NOTHING };

function plus(a: ProviderCost, b: ProviderCost): ProviderCost {
  return { calls: a.calls + b.calls, inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, ms: a.ms + b.ms };
}

export class CostMeter {
  #llm: ProviderCost = NOTHING;
  #embeddings: ProviderCost = NOTHING;
  readonly #sink: CostSink | undefined;

  constructor(sink?: CostSink) {
    this.#sink = sink;
  }

  add(provider: Provider, spent: ProviderCost): void {
    if (provider === "llm") this.#llm = plus(this.#llm, spent);
    else this.#embeddings = plus(this.#embeddings, spent);
    this.#sink?.(provider, spent);
  }

  get totals(): Cost {
    return { llm: this.#llm, embeddings: this.#embeddings };
  }
}

const current = new AsyncLocalStorage<CostMeter>();

/** Runs `work` with `meter` as the current meter: provider calls made inside it, however deep, are charged to it. */
export function metered<T>(meter: CostMeter, work: () => T): T {
  return current.run(meter, work);
}

/** Charges one provider call to the current meter; outside any meter (start-up probes) it is not counted. */
export function chargeProvider(provider: Provider, spent: ProviderCost): void {
  current.getStore()?.add(provider, spent);
}

/** The response header (and gRPC metadata) carrying a request's cost; see `costHeaderValue`. */
export const COST_HEADER = "engram-cost";

/**
 * The header's value, an RFC 8941 dictionary of integers, every member always present:
 * `llm_calls=1, llm_input_tokens=120, llm_output_tokens=15, llm_ms=45, embeddings_calls=2, embeddings_input_tokens=18, embeddings_ms=12`.
 * Milliseconds are rounded to whole ones; embeddings have no output tokens.
 */
export function costHeaderValue(cost: Cost): string {
  const { llm, embeddings } = cost;
  return (
    `llm_calls=${llm.calls}, llm_input_tokens=${llm.inputTokens}, llm_output_tokens=${llm.outputTokens}, llm_ms=${Math.round(llm.ms)}, ` +
    `embeddings_calls=${embeddings.calls}, embeddings_input_tokens=${embeddings.inputTokens}, embeddings_ms=${Math.round(embeddings.ms)}`
  );
}
