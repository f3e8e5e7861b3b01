// The Prometheus registry and every metric Engram exports, registered once at start-up.
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { CostSink } from "./cost-meter.js";

export interface Metrics {
  readonly registry: Registry;
  readonly rpcRequests: Counter<"route" | "rpc" | "transport" | "code">;
  readonly rpcDuration: Histogram<"route" | "rpc" | "transport" | "code">;
  readonly storageWrites: Counter<"kind">;
  readonly storageReads: Counter<"kind">;
  readonly ingestItems: Counter<"entry_type">;
  readonly ingestJobs: Counter<"status">;
  readonly llmCalls: Counter<"purpose" | "outcome">;
  readonly llmTokens: Counter<"purpose" | "kind">;
  readonly llmCallDuration: Histogram<"purpose">;
  /** Per API key id (never the key itself) and provider kind (`llm`, `embeddings`): what each key's work cost. */
  readonly providerCalls: Counter<"key_id" | "provider">;
  readonly providerTokens: Counter<"key_id" | "provider" | "direction">;
  readonly providerSeconds: Counter<"key_id" | "provider">;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    rpcRequests: new Counter({
      name: "service_rpc_requests_total",
      help: "RPCs handled, by HTTP route, RPC, transport and result code.",
      labelNames: ["route", "rpc", "transport", "code"],
      registers,
    }),
    rpcDuration: new Histogram({
      name: "service_rpc_duration_seconds",
      help: "RPC latency in seconds, by HTTP route, RPC, transport and result code.",
      labelNames: ["route", "rpc", "transport", "code"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    storageWrites: new Counter({
      name: "service_storage_writes_total",
      help: "Records written to storage, by record kind.",
      labelNames: ["kind"],
      registers,
    }),
    storageReads: new Counter({
      name: "service_storage_reads_total",
      help: "Records read from storage, by record kind.",
      labelNames: ["kind"],
      registers,
    }),
    ingestItems: new Counter({
      name: "service_ingest_items_total",
      help: "Memory entries ingested, by entry type.",
      labelNames: ["entry_type"],
      registers,
    }),
    ingestJobs: new Counter({
      name: "service_ingest_jobs_total",
      help: "Ingest jobs that reached a state, by state.",
      labelNames: ["status"],
      registers,
    }),
    llmCalls: new Counter({
      name: "service_llm_calls_total",
      help: "Calls made to the configured LLM provider, by purpose and outcome.",
      labelNames: ["purpose", "outcome"],
      registers,
    }),
    llmTokens: new Counter({
      name: "service_llm_tokens_total",
      help: "Tokens exchanged with the configured LLM provider, by purpose and kind (prompt, completion).",
      labelNames: ["purpose", "kind"],
      registers,
    }),
    llmCallDuration: new Histogram({
      name: "service_llm_call_duration_seconds",
      help: "Duration of LLM provider calls in seconds.",
      labelNames: ["purpose"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    providerCalls: new Counter({
      name: "service_provider_calls_total",
      help: "Calls made to an external provider (llm, embeddings), retries included, by API key id and provider.",
      labelNames: ["key_id", "provider"],
      registers,
    }),
    providerTokens: new Counter({
      name: "service_provider_tokens_total",
      help: "Tokens sent to (direction input) and received from (output) an external provider, by API key id and provider.",
      labelNames: ["key_id", "provider", "direction"],
      registers,
    }),
    providerSeconds: new Counter({
      name: "service_provider_seconds_total",
      help: "Seconds spent waiting for an external provider, by API key id and provider.",
      labelNames: ["key_id", "provider"],
      registers,
    }),
  };
}

/** The sink that adds a key's provider costs to its Prometheus totals. Key ids are bounded by the number of keys. */
export function providerCostSink(metrics: Pick<Metrics, "providerCalls" | "providerTokens" | "providerSeconds">, keyId: string): CostSink {
  return (provider, spent) => {
    metrics.providerCalls.inc({ key_id: keyId, provider }, spent.calls);
    if (spent.inputTokens > 0) metrics.providerTokens.inc({ key_id: keyId, provider, direction: "input" }, spent.inputTokens);
    if (spent.outputTokens > 0) metrics.providerTokens.inc({ key_id: keyId, provider, direction: "output" }, spent.outputTokens);
    metrics.providerSeconds.inc({ key_id: keyId, provider }, spent.ms / 1000);
  };
}
