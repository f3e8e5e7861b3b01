// Ingest of N bench-corpus facts into one fresh in-process server, timed to the last job's completion; a quick
// look at what a change costs ingest (BENCH_N, default 20000; SERVICE_* pass through to the server).
import { performance } from "node:perf_hooks";
import { Corpus, vocabulary } from "./lib/corpus.mjs";
import { ingestAll } from "./lib/api.mjs";
import { startInProcess } from "./lib/in-process.mjs";

const N = Number(process.env.BENCH_N ?? 20000);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("SERVICE_")));
const server = await startInProcess("ingest-ab", env);
const items = new Corpus(vocabulary(), 42).entries(N).map((text) => ({ text, entry_type: "fact" }));
const started = performance.now();
await ingestAll({ base: server.base, key: server.adminKey }, "ab", items, { batch: 1000, inFlight: 1 });
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ n: N, seconds: Math.round(seconds * 100) / 100, items_per_s: Math.round(N / seconds), env }));
await server.engram.close();
