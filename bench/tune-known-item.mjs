// In-process ranking tuning on the agent-traces known-item workload (bench/lib/agent-traces.mjs): the engine's own
// indexes and search, with ranking knobs varied; reports the tuning fold only unless TUNE_REPORT_HELD_OUT=1 (the
// held-out repositories are looked at only to report a final choice). Not part of `make bench`.
// Usage: node scripts/build.mjs && TUNE_VARIANTS='[{}, {"semanticWeight": 0}]' node bench/tune-known-item.mjs
import path from "node:path";
import { KINDS, TOP_K, loadMessages, pickQueries, score } from "./lib/agent-traces.mjs";
import { DEFAULT_TUNING, openEngine } from "./lib/engine-in-process.mjs";
import { ROOT } from "./lib/server.mjs";

const messages = loadMessages(path.resolve(ROOT, process.env.BENCH_TRACES ?? "../shared/data/agent-traces/swe-traces-dev.jsonl.gz"));
const queries = pickQueries(messages, Number(process.env.BENCH_QUERIES ?? 300));
const folds = process.env.TUNE_REPORT_HELD_OUT === "1" ? ["tuning", "held_out"] : ["tuning"];
const engram = await openEngine("tune-known");
const { embedder } = engram;
const messageOfSeq = new Map();
const RUN = "agent-traces";
for (let start = 0; start < messages.length; start += 1000) {
  const slice = messages.slice(start, start + 1000);
  const seqs = await engram.write(slice.map((m) => ({ runId: RUN, entryType: "trace", content: m.text, occurrenceTime: 0 })));
  seqs.forEach((seq, i) => messageOfSeq.set(seq, start + i));
}

async function evaluate(tuning, budget) {
  const ranked = [];
  const engine = engram.searchEngine(tuning);
  for (const q of queries) {
    if (!folds.includes(q.fold)) {
      ranked.push(undefined);
      continue;
    }
    const [vector] = await embedder.embed([q.text]);
    const { hits } = engine.search({
      owner: 1, scopes: [{ owner: 1, runId: RUN }], includeGlobalLessons: false, text: q.text, queryVector: vector,
      filter: { entryTypes: undefined, userId: undefined, laneFilter: "", minTimestamp: undefined, maxTimestamp: undefined },
      includeWorkingMemory: true, limit: TOP_K, budget, rankBy: "relevance",
    });
    ranked.push(hits.map((h) => messageOfSeq.get(h.entry.seq)));
  }
  return score(queries, ranked);
}

for (const variant of JSON.parse(process.env.TUNE_VARIANTS ?? "[{}]")) {
  const table = await evaluate({ ...DEFAULT_TUNING, ...variant }, variant.budget ?? "mid");
  for (const fold of folds) {
    const cells = [...KINDS, "all"].map((kind) => `${kind} ${table[fold][kind].top1}/${table[fold][kind].top10}`);
    console.log(JSON.stringify(variant), fold, "top1/top10:", cells.join("  "));
  }
}
await engram.close();
