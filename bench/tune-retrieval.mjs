// In-process retrieval tuning on LoCoMo: the engine's own indexes and search, with ranking knobs varied.
// Not part of `make bench`; used to choose DEFAULT_TUNING. Usage: npx tsc -p tsconfig.build.json && node bench/tune-retrieval.mjs
import path from "node:path";
import { DEFAULT_TUNING, openEngine } from "./lib/engine-in-process.mjs";
import { loadLocomo, recallAt } from "./lib/locomo.mjs";
import { ROOT } from "./lib/server.mjs";

const { conversations } = loadLocomo(path.resolve(ROOT, process.env.BENCH_LOCOMO ?? "../shared/data/locomo_dev.json"));
const engram = await openEngine("tune");
const { embedder } = engram;
const diaOfSeq = new Map();
for (const conv of conversations) {
  const seqs = await engram.write(conv.entries.map((e) => ({ runId: conv.id, entryType: "fact", content: e.content, occurrenceTime: e.occurrenceTime })));
  seqs.forEach((seq, i) => diaOfSeq.set(seq, conv.entries[i].diaId));
}

async function evaluate(tuning, budget = "mid") {
  const engine = engram.searchEngine(tuning);
  const sums = { r5: 0, r10: 0, r20: 0 };
  const byConversation = {};
  let n = 0;
  for (const conv of conversations) {
    for (const q of conv.questions) {
      const [vector] = await embedder.embed([q.text]);
      const { hits } = engine.search({
        owner: 1, scopes: [{ owner: 1, runId: conv.id }], includeGlobalLessons: false, text: q.text, queryVector: vector,
        filter: { entryTypes: undefined, userId: undefined, laneFilter: "", minTimestamp: undefined, maxTimestamp: undefined },
        includeWorkingMemory: true, limit: 20, budget, rankBy: "relevance",
      });
      const ranked = hits.map((h) => diaOfSeq.get(h.entry.seq));
      sums.r5 += recallAt(ranked, q.evidence, 5);
      sums.r10 += recallAt(ranked, q.evidence, 10);
      sums.r20 += recallAt(ranked, q.evidence, 20);
      const fold = (byConversation[conv.id] ??= { r10: 0, n: 0 });
      fold.r10 += recallAt(ranked, q.evidence, 10);
      fold.n++;
      n++;
    }
  }
  const folds = Object.entries(byConversation).map(([id, f]) => `${id} R@10 ${((100 * f.r10) / f.n).toFixed(1)}`);
  return { r5: (100 * sums.r5) / n, r10: (100 * sums.r10) / n, r20: (100 * sums.r20) / n, folds };
}

const variants = JSON.parse(process.env.TUNE_VARIANTS ?? "[{}]");
for (const variant of variants) {
  const result = await evaluate({ ...DEFAULT_TUNING, ...variant }, variant.budget ?? "mid");
  console.log(JSON.stringify(variant), `R@5 ${result.r5.toFixed(1)}  R@10 ${result.r10.toFixed(1)}  R@20 ${result.r20.toFixed(1)}  (${result.folds.join(", ")})`);
}
await engram.close();
