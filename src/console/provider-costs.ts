// The per-key provider totals (service_provider_*_total) as rows for the console's health page.
import type { Metrics } from "../platform/metrics.js";

/** One key's totals with one provider kind, since the process started. */
export interface ProviderCostRow {
  readonly key_id: string;
  readonly provider: string;
  readonly calls: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly seconds: number;
}

type CostMetrics = Pick<Metrics, "providerCalls" | "providerTokens" | "providerSeconds">;
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Rows by key id then provider; only `keyId`'s rows when given (a non-admin sees its own key alone). */
export async function providerCostRows(metrics: CostMetrics, keyId?: string): Promise<ProviderCostRow[]> {
  const [calls, tokens, seconds] = await Promise.all([metrics.providerCalls.get(), metrics.providerTokens.get(), metrics.providerSeconds.get()]);
  const rows = new Map<string, Mutable<ProviderCostRow>>();
  const rowOf = (labels: Partial<Record<string, string | number>>): Mutable<ProviderCostRow> | undefined => {
    const key = String(labels["key_id"] ?? "");
    const provider = String(labels["provider"] ?? "");
    if (keyId !== undefined && key !== keyId) return undefined;
    const id = `${key}\u0000${provider}`;
    let row = rows.get(id);
    if (row === undefined) {
      row = { key_id: key, provider, calls: 0, input_tokens: 0, output_tokens: 0, seconds: 0 };
      rows.set(id, row);
    }
    return row;
  };
  for (const value of calls.values) {
    const row = rowOf(value.labels);
    if (row !== undefined) row.calls += value.value;
  }
  for (const value of tokens.values) {
    const row = rowOf(value.labels);
    if (row === undefined) continue;
    if (value.labels.direction === "input") row.input_tokens += value.value;
    else row.output_tokens += value.value;
  }
  for (const value of seconds.values) {
    const row = rowOf(value.labels);
    if (row !== undefined) row.seconds = Math.round((row.seconds + value.value) * 1000) / 1000;
  }
  return [...rows.values()].sort((a, b) => a.key_id.localeCompare(b.key_id) || a.provider.localeCompare(b.provider));
}
