// Health: is the node ready, how big is its storage, what each key spent on providers, and (for admins) ingest rate
// and query latency over time.
import { useEffect } from "preact/hooks";
import { getConsole } from "../api";
import { Async, useAsync } from "../components/async";
import { Badge } from "../components/badge";
import { TimeChart } from "../components/chart";
import { Table } from "../components/table";
import { Time } from "../components/time";
import { bytes, count } from "../format";
import type { HealthResponse } from "../types";

/** The series is sampled by the server; re-reading it every few seconds keeps the charts moving. */
const REFRESH_MS = 5000;

export function HealthPage() {
  const health = useAsync(() => getConsole<HealthResponse>("health"), []);
  useEffect(() => {
    const timer = setInterval(() => health.reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return (
    <section class="page" aria-labelledby="health-title">
      <header class="page-head">
        <h1 id="health-title">Health</h1>
      </header>
      <Async state={health}>{(data) => <HealthView health={data} />}</Async>
    </section>
  );
}

function HealthView({ health }: { health: HealthResponse }) {
  const { readiness, storage, series } = health;
  return (
    <>
      <div class="grid-3">
        <article class="card" aria-label="Readiness">
          <h2>Readiness</h2>
          <p class="big-number readiness">
            <Badge text={readiness.status} />
          </p>
          {readiness.reason && <p class="muted">{readiness.reason.replaceAll("_", " ")}</p>}
        </article>
        <article class="card" aria-label="Storage size">
          <h2>Storage</h2>
          {storage ? (
            <>
              <p class="big-number">{bytes(storage.disk_size_bytes)}</p>
              <p class="muted small">
                on disk · vectors of {storage.vector_dimension} dimensions · last compaction{" "}
                {storage.last_compaction_at ? <Time iso={storage.last_compaction_at} /> : "never"}
                {storage.compaction_running && " · compacting now"}
              </p>
            </>
          ) : (
            <p class="muted">Storage statistics are visible to admins only.</p>
          )}
        </article>
        <article class="card" aria-label="Latest rates">
          <h2>Now</h2>
          {series && series.points.length > 0 ? <Latest series={series} /> : <p class="muted">{series ? "Collecting samples…" : "Server-wide metrics are shown to admins only."}</p>}
        </article>
      </div>
      {series && series.points.length > 0 && <Charts series={series} />}
      <article class="card" aria-label="Provider costs">
        <h2>Provider costs</h2>
        <Table
          label="Provider costs"
          rows={health.provider_costs}
          rowKey={(row) => `${row.key_id}/${row.provider}`}
          empty="No call to an LLM or embeddings endpoint since the server started."
          columns={[
            { header: "Key id", cell: (row) => <span class="mono">{row.key_id}</span> },
            { header: "Provider", cell: (row) => row.provider },
            { header: "Calls", cell: (row) => count(row.calls), numeric: true },
            { header: "Input tokens", cell: (row) => count(row.input_tokens), numeric: true },
            { header: "Output tokens", cell: (row) => count(row.output_tokens), numeric: true },
            { header: "Time", cell: (row) => `${row.seconds.toFixed(1)} s`, numeric: true },
          ]}
        />
        <p class="muted small">Per API key since the server started (the same totals as service_provider_*_total in /metrics).</p>
      </article>
      {storage && (
        <div class="grid-2">
          <article class="card" aria-label="Databases">
            <h2>Databases</h2>
            <Table
              label="Databases"
              rows={storage.databases.filter((db) => Number(db.key_count) > 0).sort((a, b) => Number(b.key_count) - Number(a.key_count))}
              rowKey={(db) => db.name}
              empty="Every database is empty."
              columns={[
                { header: "Name", cell: (db) => <span class="mono">{db.name}</span> },
                { header: "Keys", cell: (db) => count(db.key_count), numeric: true },
              ]}
            />
            <p class="muted small">{storage.databases.filter((db) => Number(db.key_count) === 0).length} empty databases not shown.</p>
          </article>
          <article class="card" aria-label="Indexes">
            <h2>Indexes</h2>
            <Table
              label="Indexes"
              rows={storage.indexes}
              rowKey={(index) => index.name}
              empty="No index."
              columns={[
                { header: "Name", cell: (index) => <span class="mono">{index.name}</span> },
                { header: "Entries", cell: (index) => count(index.entry_count), numeric: true },
                { header: "Size", cell: (index) => bytes(index.size_bytes), numeric: true },
              ]}
            />
          </article>
        </div>
      )}
    </>
  );
}

type Series = NonNullable<HealthResponse["series"]>;

function Latest({ series }: { series: Series }) {
  const last = series.points[series.points.length - 1];
  if (!last) return null;
  const ms = (value: number | null) => (value === null ? "–" : `${value.toFixed(1)} ms`);
  return (
    <dl class="stats">
      <dt>Ingest</dt>
      <dd>{last.ingest_items_per_s.toFixed(1)} items/s</dd>
      <dt>Requests</dt>
      <dd>{last.requests_per_s.toFixed(1)} /s</dd>
      <dt>Query p50</dt>
      <dd>{ms(last.query_p50_ms)}</dd>
      <dt>Query p99</dt>
      <dd>{ms(last.query_p99_ms)}</dd>
    </dl>
  );
}

function Charts({ series }: { series: Series }) {
  const times = series.points.map((p) => p.t);
  return (
    <div class="grid-3 charts">
      <article class="card" aria-label="Ingest rate chart">
        <TimeChart title="Ingest rate" unit="items/s" times={times} series={[{ label: "items/s", colour: "#2f7de1", values: series.points.map((p) => p.ingest_items_per_s) }]} />
      </article>
      <article class="card" aria-label="Query latency chart">
        <TimeChart
          title="Query latency"
          unit="ms"
          times={times}
          series={[
            { label: "p50", colour: "#1f9d6b", values: series.points.map((p) => p.query_p50_ms) },
            { label: "p99", colour: "#d9822b", values: series.points.map((p) => p.query_p99_ms) },
          ]}
        />
      </article>
      <article class="card" aria-label="Request rate chart">
        <TimeChart title="Requests" unit="req/s" times={times} series={[{ label: "req/s", colour: "#7b5cd6", values: series.points.map((p) => p.requests_per_s) }]} />
      </article>
    </div>
  );
}
