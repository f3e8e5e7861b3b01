// The learning loop end to end: do lessons reflected from past runs reach the next run that meets the same
// pitfall — in its context at the start, and above all when it asks memory about the failure it just met (context,
// query, diagnose) — without crowding it with guidance for other pitfalls? Beside a baseline that retrieves raw traces
// of all earlier runs, measured in the same invocation on the same seeded runs.
//
// Usage: make bench-learning   (or: npx tsc -p tsconfig.build.json && node bench/learning.mjs)
// Env:   BENCH_LEARNING_GENERATOR       all (default) | both (tuning and heldout) | a comma list of tuning, paraphrase,
//                                       heldout: which run generators are measured, each with its own arms and its own
//                                       results section
//        BENCH_LEARNING_ABLATIONS       0 skips the loop_no_negative arm (default: run it)
//        BENCH_LEARNING_RUNS            runs replayed in each arm (default 120)
//        BENCH_LEARNING_SEED            generator seed (default 7); run i depends on (seed, i) only
//        BENCH_LEARNING_PITFALL_SHARE   share of runs that meet a pitfall (default 0.7)
//        BENCH_LEARNING_REFLECT_REPEATS timed reflects of a 200-item run (default 30, after 3 untimed)
//        BENCH_QUIET_WAIT_S             before the latency phase, wait up to this long for a quiet machine (default 60)
//        BENCH_ATTEMPTS                 tries of the latency series when other processes took > 10 % of the CPUs
//                                       during it (default 2); the least disturbed is kept
//        BENCH_SERVER                   compiled server entry (default dist/src/serve.js)
// Writes bench/results/learning.json; prints a summary table per generator to stderr. Exit status 0 when every figure
// was measured, 2 when the learning routes are not implemented yet or a generator is missing (what could be measured
// is still written), 1 on failure.
//
// Generators. `tuning` (bench/lib/agent-runs.mjs) and `paraphrase` (bench/lib/agent-runs-paraphrase.mjs: other
// families, three wordings of each pitfall in other log formats, little word overlap) are the ones the server is tuned
// on. `heldout`
// (bench/lib/agent-runs-heldout.mjs, same interface, imported only when selected) is never tuned on: its own task
// families and pitfalls, several wordings and log formats of each symptom, little word overlap between occurrences.
// Runs are task families with recurring pitfalls, each seen in the traces as a symptom, a failed step and the fix that
// worked. Which pitfall a lesson, a source or a trace is about is decided from its text by the generator's `classify`
// (pitfall-specific keys), so the figures do not depend on how the server names or merges lessons; a lesson "fixes"
// pitfall P when its text is about P and names P's fix. Learned sources are lessons and rules: entry_type or
// origin_entry_type `lesson`/`rule`, or retrieval_mode `lesson_overlay`/`rule_overlay`. A source about no pitfall
// ("general") is counted, never misleading.
//
// Arms, per generator, each on a fresh server, the same runs in the same order:
//   loop              directive hints as the generator makes them, honest negative outcomes; also tracks promotions
//                     (all lessons listed after every run), then the quarantine check and reflect latency
//   loop_no_hints     directive_hint of every step blanked: hit rates only
//   loop_no_negative  hints on, no negative outcomes: what negative feedback does (BENCH_LEARNING_ABLATIONS=0 skips it)
//   baseline          raw traces of all earlier runs in one shared run, no reflect, no outcomes
//
// The honest agent, per run of a loop arm (one API key for every run; run_id `loop-<run>` unique per run):
//   1. "start": POST /v2/control/context {run_id, query: the task text, max_token_budget 1500}. The run is empty, so
//      its learned sources are what memory carries over from earlier runs.
//   2. The run's traces through POST /v2/control/batch_insert (entry_type `trace`, metadata {step_id}): the items before
//      the first `symptom` item (all when there is none), then, in pitfall runs, the measurements at the failure (3.),
//      then the rest; then one POST /v2/control/step_outcome per step (the failed step with its rationale and, when
//      hints are on and the generator gave one, a directive hint).
//   3. At the failure (pitfall runs), `failure` = the first symptom item's text:
//      "failure"  POST /v2/control/context {query: task + "\n" + failure, max_token_budget 1500} (the headline figure:
//                 the moment an agent asks memory about what it just met);
//      "query"    POST /v2/control/query {query: failure, limit 5}: the learned sources among `evidence`;
//      "diagnose" POST /v2/control/diagnose {error_text: failure, limit 5}: `failure_lessons`.
//   4. POST /v2/control/reflect {run_id} with the built-in extractor; decisions are counted, lesson ids kept.
//   5. POST /v2/control/outcome: `success` (signal 1) when the run met no pitfall, or met one and a lesson fixing it was
//      in the top 5 of any measurement of the run; those lessons are credited through `entry_ids`. Otherwise `partial`
//      (signal 0.5) referencing the lesson its reflection just learned: the run recovered with the fix it recorded (not
//      `failure`, which would punish the lesson whose fix worked). Then, unless negative outcomes are off, one
//      `failure` outcome (signal −1, rationale "A recalled lesson did not apply to this failure") naming in `entry_ids`
//      every surfaced learned source (any block or list of this run) about another pitfall than the run's (in a clean
//      run: about any pitfall), when there is one.
// Figures per measurement point: hit@5 from the 2nd occurrence of a pitfall on (a fixing lesson among the first 5
// learned sources in block order for context, among the 5 returned for query and diagnose), by occurrence; misleading
// (context: a learned source about another pitfall anywhere in the block; query, diagnose: among the 5 returned), from
// another family; for context, blocks without any learned source. `lesson_hit_rate` is the failure-context figure;
// `any` is a fix in the top 5 of any point. After the loop: `wrongly_quarantined`, pitfall lessons in promotion state
// `quarantined` (no fix fails during the loop, so each is a lesson punished for being surfaced elsewhere).
// Quarantine check (loop arm): the most promoted pitfall lesson (scope global, else auditioning, else proposed) meets 4
// more runs of its pitfall in which its fix fails (outcome `failure`, signal −1, crediting it); its state is read after
// each, and a 5th run's context must no longer contain it. Reflect latency (loop arm): 3 untimed and 30 timed reflects,
// each on a fresh run of exactly 200 trace items (plus its step outcomes), on the same server (so the store holds the
// loop's lessons), after waiting for a quiet machine.
// Baseline: QueryRequest takes one run_id (linked runs are refused), so every run's traces go into one shared run;
// POST /v2/control/query {run_id: shared, limit 5, entry_types [trace]} over the traces of all earlier runs, "start"
// with the task text and, in pitfall runs, "failure" with the failure text; then the run's traces are written. A hit
// is a returned trace that shows the fix of this run's pitfall; misleading is one that shows another pitfall's fix.
import fs from "node:fs";
import path from "node:path";
import { ApiError, implemented, post, round, summarize } from "./lib/api.mjs";
import { interferenceMonitor, machine, waitQuietMachine, writeResults } from "./lib/machine.mjs";
import { ROOT, mintAdminKey, removeDir, startServer, tempDir } from "./lib/server.mjs";

const GENERATOR_MODULES = { tuning: "./lib/agent-runs.mjs", paraphrase: "./lib/agent-runs-paraphrase.mjs", heldout: "./lib/agent-runs-heldout.mjs" };
const GENERATOR_CHOICE = process.env.BENCH_LEARNING_GENERATOR ?? "all";
const ABLATIONS = process.env.BENCH_LEARNING_ABLATIONS !== "0";
const RUNS = Number(process.env.BENCH_LEARNING_RUNS ?? 120);
const SEED = Number(process.env.BENCH_LEARNING_SEED ?? 7);
const PITFALL_SHARE = Number(process.env.BENCH_LEARNING_PITFALL_SHARE ?? 0.7);
const REFLECT_REPEATS = Number(process.env.BENCH_LEARNING_REFLECT_REPEATS ?? 30);
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT_S ?? 60) * 1000;
const ATTEMPTS = Math.max(1, Number(process.env.BENCH_ATTEMPTS ?? 2));
/** Above this share of all cores used by other processes during the latency series, it is repeated. */
const MAX_DISTURBANCE = 0.1;
const REFLECT_WARMUP = 3;
const REFLECT_ITEMS = 200;
const QUARANTINE_RUNS = 4;
const TOP = 5;
const CONTEXT_BUDGET = 1500;
const LIST_PAGE = 500;
/** Lessons written out in the results' inventory. */
const LESSONS_LISTED = 60;
const AGENT = "bench-agent";
const BASELINE_RUN = "baseline-shared";
const NEGATIVE_RATIONALE = "A recalled lesson did not apply to this failure";
/** Run i's events happen an hour after run i−1's, five seconds apart within the run. */
const T0 = 1_714_000_000;
const COMMON_TARGETS = { misleading_context_max: 0.05, misleading_query_max: 0.05, misleading_diagnose_max: 0.1, reflect_p99_ms_max: 200, wrongly_quarantined_max: 0, no_hints_hit_rate_min: 0.65 };
const TARGETS = {
  // Today's targets on the tuning generator (hit rate at the start context too), plus the held-out set.
  tuning: { lesson_hit_rate_min: 0.9, start_lesson_hit_rate_min: 0.9, ...COMMON_TARGETS },
  paraphrase: { lesson_hit_rate_min: 0.85, ...COMMON_TARGETS },
  heldout: { lesson_hit_rate_min: 0.85, ...COMMON_TARGETS },
};
const POINTS = ["start", "failure", "query", "diagnose"];
const LOOP_ROUTES = ["/v2/control/batch_insert", "/v2/control/context", "/v2/control/query", "/v2/control/diagnose", "/v2/control/step_outcome", "/v2/control/reflect", "/v2/control/outcome", "/v2/control/lessons"];
const BASELINE_ROUTES = ["/v2/control/batch_insert", "/v2/control/query"];

const log = (msg) => process.stderr.write(`[learning ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const rate = (n, d) => (d > 0 ? round(n / d, 4) : null);
const count = (map, key) => (map[key] = (map[key] ?? 0) + 1);

/**
 * One generator module with its classifier memoised by text (classifying lesson texts is the bench's hot loop: every
 * listing, every run).
 */
function generatorOf(name, mod) {
  const classified = new Map();
  return {
    name,
    mod,
    about(text) {
      let c = classified.get(text);
      if (!c) classified.set(text, (c = mod.classify(text)));
      return c;
    },
    familyOf: (pitfallId) => mod.pitfallById(pitfallId).family,
  };
}

/** Imported when selected: the held-out generator may not exist yet. */
async function loadGenerator(name) {
  const url = new URL(GENERATOR_MODULES[name], import.meta.url);
  if (!fs.existsSync(url)) return { name, missing: `${GENERATOR_MODULES[name]} not found` };
  return generatorOf(name, await import(url.href));
}

/** A run with the directive hint of every step blanked (harmless when the generator already did). */
const withoutHints = (run) => ({ ...run, steps: run.steps.map((s) => ({ ...s, directive_hint: "" })) });

/** The generator's runs, numbered by occurrence of their pitfall; hints blanked when `hints` is false. */
function prepareRuns(g, hints) {
  const runs = g.mod.generateRuns({ seed: SEED, count: RUNS, pitfallShare: PITFALL_SHARE, hints });
  const seen = new Map();
  return runs.map((run) => {
    if (run.pitfall) seen.set(run.pitfall, (seen.get(run.pitfall) ?? 0) + 1);
    const numbered = { ...run, occurrence: run.pitfall ? seen.get(run.pitfall) : 0 };
    return hints ? numbered : withoutHints(numbered);
  });
}

/** Writes a run's items from index `first` on through the synchronous bulk write (durable and searchable on answer). */
async function writeTraces(server, runId, run, t0, items = run.items, first = 0) {
  if (items.length === 0) return;
  const batch = items.map((item, i) => ({
    item_id: `${run.id}-${first + i}`,
    text: item.text,
    entry_type: "trace",
    metadata_json: JSON.stringify({ step_id: item.step_id }),
    occurrence_time: t0 + (first + i) * 5,
  }));
  const res = await post(server, "/v2/control/batch_insert", { run_id: runId, items: batch, agent_id: AGENT });
  if (res.success === false) throw new Error(`batch_insert into ${runId}: ${res.message}`);
}

async function recordSteps(server, runId, run) {
  for (const step of run.steps) await post(server, "/v2/control/step_outcome", { run_id: runId, ...step, agent_id: AGENT });
}

/**
 * The learned sources of a context block or an evidence list (lessons, and rules: reflect stores `rule` lessons as rule
 * entries, which the block puts first as active rules), with their rank in the list and what they are about.
 */
function learnedSources(g, sources) {
  const out = [];
  (sources ?? []).forEach((s, rank) => {
    const type = s.entry_type || s.origin_entry_type;
    const kind = type === "rule" || s.retrieval_mode === "rule_overlay" ? "rule" : type === "lesson" || s.retrieval_mode === "lesson_overlay" ? "lesson" : "";
    if (kind) out.push({ id: s.id, rank, kind, ...g.about(s.content ?? "") });
  });
  return out;
}

async function context(server, runId, query) {
  return post(server, "/v2/control/context", { run_id: runId, query, max_token_budget: CONTEXT_BUDGET, agent_id: AGENT });
}

const labelOf = (l) => `${l.kind === "rule" ? "rule " : ""}${l.pitfall ? `${l.pitfall}${l.fix ? "" : " (no fix)"}` : "general"}`;

/**
 * One measurement point of a run: `learned` are the learned sources in answer order. A hit is a fixing lesson among the
 * first TOP of them; misleading is a source about another pitfall anywhere in a context block (`block`), among the
 * first TOP otherwise. Returns the row's figures and the ids to credit and to report as not applying.
 */
function measure(g, run, learned, { block }) {
  const top = learned.slice(0, TOP);
  const eligible = run.pitfall !== null && run.occurrence >= 2;
  const fixing = run.pitfall ? top.filter((l) => l.pitfall === run.pitfall && l.fix) : [];
  const foreignAll = learned.filter((l) => l.pitfall && l.pitfall !== run.pitfall);
  const foreign = block ? foreignAll : foreignAll.filter((l) => top.includes(l));
  const fixRank = run.pitfall ? learned.findIndex((l) => l.pitfall === run.pitfall && l.fix) : -1;
  return {
    row: {
      lessons: learned.length,
      top5: top.map(labelOf).join(" | "),
      hit: eligible ? fixing.length > 0 : null,
      hit_about: eligible ? top.some((l) => l.pitfall === run.pitfall) : null,
      ...(block ? { hit_in_block: eligible ? fixRank >= 0 : null, rules: learned.filter((l) => l.kind === "rule").length, general: learned.filter((l) => !l.pitfall).length } : {}),
      fix_rank: fixRank >= 0 ? fixRank + 1 : null,
      misleading: foreign.length > 0,
      misleading_other_family: foreign.some((l) => g.familyOf(l.pitfall) !== run.family),
    },
    fixing: fixing.map((l) => l.id),
    foreign: foreignAll.map((l) => l.id),
  };
}

/** Every stored lesson of the caller, all pages. */
async function listLessons(server) {
  const lessons = [];
  let token = "";
  for (let page = 0; page < 200; page++) {
    const res = await post(server, "/v2/control/lessons", { limit: LIST_PAGE, page_token: token });
    lessons.push(...(res.lessons ?? []));
    token = res.next_page_token ?? "";
    if (!token) return lessons;
  }
  throw new Error("lesson listing did not end after 200 pages");
}

const lessonIdOf = (lesson) => lesson.id || lesson.lesson_id;
const lessonState = (lesson) =>
  lesson
    ? {
        scope: lesson.scope ?? "",
        promotion_state: lesson.promotion_state ?? "",
        promotion_target_scope: lesson.promotion_target_scope ?? "",
        confidence: round(lesson.confidence ?? 0, 3),
        reinforcement_count: lesson.reinforcement_count ?? 0,
        stale: lesson.stale ?? false,
      }
    : null;

/** The order in which a lesson counts as promoted: scope global, auditioning, proposed, none. */
const promotionRank = (lesson) => (lesson.scope === "global" ? 0 : lesson.promotion_state === "auditioning" ? 1 : lesson.promotion_state === "proposed" ? 2 : 3);

/** Per pitfall, notes the occurrence at which its lessons first reach each promotion milestone. */
function trackPromotion(g, trackers, lessons, runIndex) {
  const byPitfall = new Map();
  for (const lesson of lessons) {
    const c = g.about(lesson.content ?? "");
    if (!c.pitfall) continue;
    const list = byPitfall.get(c.pitfall) ?? [];
    list.push(lesson);
    byPitfall.set(c.pitfall, list);
  }
  for (const [pitfall, tracker] of trackers) {
    if (tracker.occurrences === 0) continue;
    const list = byPitfall.get(pitfall) ?? [];
    const milestones = {
      proposed: list.some((l) => l.promotion_state === "proposed"),
      auditioning: list.some((l) => l.promotion_state === "auditioning"),
      quarantined: list.some((l) => l.promotion_state === "quarantined"),
      global: list.some((l) => l.scope === "global"),
    };
    for (const [name, reached] of Object.entries(milestones)) {
      if (reached && !tracker.first[name]) tracker.first[name] = { occurrence: tracker.occurrences, after_run: runIndex };
    }
  }
}

/** A response kept in a row: strings and arrays cut short, the fields every answer has dropped. */
function trimmed(value, depth = 0) {
  if (typeof value === "string") return value.length > 160 ? `${value.slice(0, 160)}…` : value;
  if (Array.isArray(value)) return value.slice(0, 8).map((v) => trimmed(v, depth + 1));
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      if (depth === 0 && (k === "success" || k === "outcome_id" || k === "deduplicated")) continue;
      out[k] = depth > 3 ? "…" : trimmed(v, depth + 1);
    }
    return out;
  }
  return value;
}

/**
 * One loop arm over `runs` (see the header). `negative`: send the honest negative outcome. `track`: list all lessons
 * after every run to follow promotions (the main arm only). Returns the final lesson list.
 */
async function loopArm(server, g, runs, out, { negative, track }) {
  const trackers = new Map(g.mod.PITFALLS.map((p) => [p.id, { occurrences: 0, first: {} }]));
  const decisions = {};
  const reflectPromotion = {};
  const rejectReasons = {};
  const outcomes = {};
  const emptyReasons = { start: {}, failure: {} };
  const ms = { start: [], failure: [], query: [], diagnose: [], reflect: [] };
  const totals = { candidates: 0, lessons_stored: 0, degraded: 0, reflect_without_lessons: 0, credited: 0, entries_reinforced: 0, skipped_entry_ids: 0, negative_outcomes: 0, negative_entries_named: 0, negative_entries_reinforced: 0, negative_skipped_entry_ids: 0, pitfall_runs_without_symptom: 0 };
  const rows = [];
  out.runs = rows;
  const timed = async (point, promise) => {
    const t = performance.now();
    const res = await promise();
    ms[point].push(performance.now() - t);
    return res;
  };
  for (const run of runs) {
    const runId = `loop-${run.id}`;
    const tracker = run.pitfall ? trackers.get(run.pitfall) : undefined;
    if (tracker) tracker.occurrences++;
    const t0 = T0 + run.index * 3600;
    const measured = {};

    const start = await timed("start", () => context(server, runId, run.task));
    count(emptyReasons.start, start.empty_reason || "(none)");
    measured.start = measure(g, run, learnedSources(g, start.sources), { block: true });

    const firstSymptom = run.items.findIndex((item) => item.kind === "symptom");
    const head = firstSymptom < 0 ? run.items : run.items.slice(0, firstSymptom);
    await writeTraces(server, runId, run, t0, head, 0);
    if (run.pitfall && firstSymptom < 0) totals.pitfall_runs_without_symptom++;
    if (run.pitfall && firstSymptom >= 0) {
      const failure = run.items[firstSymptom].text;
      const ctx = await timed("failure", () => context(server, runId, `${run.task}\n${failure}`));
      count(emptyReasons.failure, ctx.empty_reason || "(none)");
      measured.failure = measure(g, run, learnedSources(g, ctx.sources), { block: true });
      const queried = await timed("query", () => post(server, "/v2/control/query", { run_id: runId, query: failure, limit: TOP, agent_id: AGENT }));
      measured.query = measure(g, run, learnedSources(g, queried.evidence), { block: false });
      const diagnosed = await timed("diagnose", () => post(server, "/v2/control/diagnose", { run_id: runId, error_text: failure, limit: TOP }));
      measured.diagnose = measure(g, run, learnedSources(g, diagnosed.failure_lessons), { block: false });
      await writeTraces(server, runId, run, t0, run.items.slice(firstSymptom), firstSymptom);
    }
    await recordSteps(server, runId, run);

    const reflected = await timed("reflect", () => post(server, "/v2/control/reflect", { run_id: runId, agent_id: AGENT }));
    const candidates = reflected.lessons ?? [];
    const decided = reflected.decisions ?? [];
    totals.candidates += candidates.length;
    totals.lessons_stored += reflected.lessons_stored ?? 0;
    if (reflected.degraded) totals.degraded++;
    if (candidates.length === 0) totals.reflect_without_lessons++;
    const produced = [];
    const runDecisions = {};
    candidates.forEach((lesson, i) => {
      const d = decided[i] ?? {};
      const decision = d.decision || (lesson.lesson_id ? "stored" : "rejected");
      count(decisions, decision);
      count(runDecisions, decision);
      if (d.promotion_state) count(reflectPromotion, d.promotion_state);
      if (decision === "rejected" && Object.keys(rejectReasons).length < 10) count(rejectReasons, d.reason || "(no reason)");
      const id = d.lesson_id || lesson.lesson_id;
      if (id) produced.push({ id, decision, ...g.about(lesson.content ?? "") });
    });
    const reference = produced.find((p) => run.pitfall && p.pitfall === run.pitfall) ?? produced[0];

    const points = Object.values(measured);
    const credit = [...new Set(points.flatMap((m) => m.fixing))];
    const outcome = !run.pitfall || credit.length > 0 ? "success" : "partial";
    const rationale = !run.pitfall
      ? "the run met no failure"
      : credit.length > 0
        ? "a recalled lesson covered the failure this run met"
        : "a step failed; the run recovered with the fix its reflection recorded";
    const recorded = await post(server, "/v2/control/outcome", {
      run_id: runId,
      reference_id: reference?.id ?? "",
      outcome,
      signal: outcome === "success" ? 1 : 0.5,
      entry_ids: credit,
      rationale,
      agent_id: AGENT,
    });
    count(outcomes, outcome);
    totals.credited += credit.length;
    totals.entries_reinforced += recorded.entries_reinforced ?? 0;
    totals.skipped_entry_ids += (recorded.skipped_entry_ids ?? []).length;

    const notApplying = [...new Set(points.flatMap((m) => m.foreign))];
    let negativeRow = null;
    if (negative && notApplying.length > 0) {
      const res = await post(server, "/v2/control/outcome", { run_id: runId, outcome: "failure", signal: -1, entry_ids: notApplying, rationale: NEGATIVE_RATIONALE, agent_id: AGENT });
      count(outcomes, "failure (did not apply)");
      totals.negative_outcomes++;
      totals.negative_entries_named += notApplying.length;
      totals.negative_entries_reinforced += res.entries_reinforced ?? 0;
      totals.negative_skipped_entry_ids += (res.skipped_entry_ids ?? []).length;
      negativeRow = { named: notApplying.length, entries_reinforced: res.entries_reinforced ?? 0, negative_response: trimmed(res) };
    }

    const anyHit = run.pitfall !== null && run.occurrence >= 2 ? points.some((m) => m.row.hit) : null;
    if (tracker && anyHit && !tracker.first.hit) tracker.first.hit = { occurrence: run.occurrence, after_run: run.index };
    if (track) trackPromotion(g, trackers, await listLessons(server), run.index);
    rows.push({
      run: run.id,
      family: run.family,
      pitfall: run.pitfall,
      occurrence: run.occurrence,
      ...Object.fromEntries(POINTS.map((p) => [p, measured[p]?.row ?? null])),
      any_hit: anyHit,
      reflect_decisions: Object.entries(runDecisions).map(([k, v]) => `${k} ${v}`).join(", "),
      reflect_ms: round(ms.reflect.at(-1), 2),
      outcome,
      reference_id: reference?.id ?? "",
      credited: credit.length,
      not_applying: notApplying.length,
      negative: negativeRow,
    });
    if ((run.index + 1) % 20 === 0) log(`${g.name} ${out.arm}: ${run.index + 1} of ${runs.length} runs`);
  }
  out.figures = armFigures(rows);
  out.reflect_decisions = decisions;
  out.reflect_promotion_proposals = reflectPromotion;
  out.reflect_reject_reasons = rejectReasons;
  out.reflect_totals = totals;
  out.outcomes = outcomes;
  out.context_empty_reasons = emptyReasons;
  out.latency_ms = Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, summarize(v)]));
  if (track) out.promotion = promotionFigures(trackers);
  const lessons = await listLessons(server);
  const wrong = lessons.filter((l) => g.about(l.content ?? "").pitfall && l.promotion_state === "quarantined");
  out.wrongly_quarantined = wrong.length;
  out.wrongly_quarantined_lessons = wrong.slice(0, 10).map((l) => ({ id: lessonIdOf(l), about: g.about(l.content ?? "").pitfall, ...lessonState(l), content: String(l.content ?? "").slice(0, 160) }));
  out.lessons_final = summariseLessons(g, lessons);
  return lessons;
}

const hitsOf = (subset, field = "hit") => ({ n: subset.length, hits: subset.filter((r) => r[field]).length, rate: rate(subset.filter((r) => r[field]).length, subset.length) });
const shareOf = (subset, field) => ({ n: subset.length, count: subset.filter((r) => r[field]).length, rate: rate(subset.filter((r) => r[field]).length, subset.length) });

/** Hit and misleading figures of one measurement point (`cells` pairs each measured row with its run's facts). */
function pointFigures(cells) {
  const eligible = cells.filter((c) => c.hit !== null);
  const pitfallRuns = cells.filter((c) => c.pitfall);
  const cleanRuns = cells.filter((c) => !c.pitfall);
  return {
    lesson_hit_rate: hitsOf(eligible).rate,
    hits: hitsOf(eligible),
    hit_rate_by_occurrence: {
      second: hitsOf(eligible.filter((c) => c.occurrence === 2)),
      third: hitsOf(eligible.filter((c) => c.occurrence === 3)),
      fourth_on: hitsOf(eligible.filter((c) => c.occurrence >= 4)),
    },
    hit_rate_without_fix_requirement: hitsOf(eligible, "hit_about"),
    ...(cells[0]?.hit_in_block === undefined ? {} : { hit_rate_anywhere_in_block: hitsOf(eligible, "hit_in_block") }),
    misleading_rate: shareOf(cells, "misleading").rate,
    misleading: shareOf(cells, "misleading"),
    ...(cleanRuns.length > 0 ? { misleading_in_pitfall_runs: shareOf(pitfallRuns, "misleading"), misleading_in_clean_runs: shareOf(cleanRuns, "misleading") } : {}),
    misleading_other_family_rate: shareOf(cells, "misleading_other_family").rate,
    ...(cells[0]?.lessons === undefined
      ? {}
      : {
          mean_learned_sources: round(cells.reduce((a, c) => a + c.lessons, 0) / Math.max(1, cells.length), 2),
          empty_of_lessons: shareOf(cells.map((c) => ({ empty: c.lessons === 0 })), "empty"),
        }),
    ...(cells[0]?.rules === undefined
      ? {}
      : {
          mean_rules: round(cells.reduce((a, c) => a + c.rules, 0) / Math.max(1, cells.length), 2),
          mean_general: round(cells.reduce((a, c) => a + c.general, 0) / Math.max(1, cells.length), 2),
        }),
  };
}

/** An arm's figures: per measurement point, the headline names, and the combined "any point" hit. */
function armFigures(rows) {
  const points = {};
  for (const p of POINTS) {
    const cells = rows.filter((r) => r[p]).map((r) => ({ pitfall: r.pitfall, occurrence: r.occurrence, family: r.family, ...r[p] }));
    if (cells.length > 0) points[p] = pointFigures(cells);
  }
  const anyEligible = rows.filter((r) => r.any_hit !== undefined && r.any_hit !== null);
  return {
    lesson_hit_rate: points.failure?.lesson_hit_rate ?? null,
    misleading_failure_context_rate: points.failure?.misleading_rate ?? null,
    start_lesson_hit_rate: points.start?.lesson_hit_rate ?? null,
    start_misleading_rate: points.start?.misleading_rate ?? null,
    query_hit_rate: points.query?.lesson_hit_rate ?? null,
    query_misleading_rate: points.query?.misleading_rate ?? null,
    diagnose_hit_rate: points.diagnose?.lesson_hit_rate ?? null,
    diagnose_misleading_rate: points.diagnose?.misleading_rate ?? null,
    ...(rows.some((r) => r.any_hit !== undefined) ? { any_hit_rate: hitsOf(anyEligible, "any_hit").rate, any_hits: hitsOf(anyEligible, "any_hit") } : {}),
    points,
  };
}

function promotionFigures(trackers) {
  const perPitfall = {};
  for (const [pitfall, t] of trackers) perPitfall[pitfall] = { occurrences: t.occurrences, ...t.first };
  const seenTwice = [...trackers.values()].filter((t) => t.occurrences >= 2);
  const toGlobal = seenTwice.filter((t) => t.first.global).map((t) => t.first.global.occurrence);
  const toPending = seenTwice.filter((t) => t.first.proposed || t.first.auditioning).map((t) => Math.min(t.first.proposed?.occurrence ?? Infinity, t.first.auditioning?.occurrence ?? Infinity));
  const median = (xs) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] : null);
  return {
    pitfalls_seen_twice_or_more: seenTwice.length,
    reached_global: toGlobal.length,
    occurrences_to_global_median: median(toGlobal),
    occurrences_to_global_max: toGlobal.length ? Math.max(...toGlobal) : null,
    reached_pending_promotion: toPending.length,
    occurrences_to_pending_median: median(toPending),
    per_pitfall: perPitfall,
  };
}

function summariseLessons(g, lessons) {
  const by = (key) => {
    const out = {};
    for (const l of lessons) count(out, l[key] || "(empty)");
    return out;
  };
  return {
    count: lessons.length,
    by_scope: by("scope"),
    by_promotion_state: by("promotion_state"),
    by_lesson_type: by("lesson_type"),
    about_a_pitfall: lessons.filter((l) => g.about(l.content ?? "").pitfall).length,
    naming_the_fix: lessons.filter((l) => g.about(l.content ?? "").fix).length,
    // The most promoted and most reinforced first; the whole list can run to hundreds.
    listed: Math.min(lessons.length, LESSONS_LISTED),
    lessons: [...lessons].sort((a, b) => promotionRank(a) - promotionRank(b) || (b.reinforcement_count ?? 0) - (a.reinforcement_count ?? 0)).slice(0, LESSONS_LISTED).map((l) => ({ id: lessonIdOf(l), about: g.about(l.content ?? "").pitfall, fix: g.about(l.content ?? "").fix, source_run_id: l.source_run_id, lesson_type: l.lesson_type, ...lessonState(l), content: String(l.content ?? "").slice(0, 160) })),
  };
}

/**
 * Takes the most promoted pitfall lesson, lets its fix fail in QUARANTINE_RUNS runs of its pitfall (outcome failure,
 * signal −1, the lesson credited by reference and entry_ids) and checks that it ends quarantined and is missing from
 * the next context for that pitfall. These runs are not reflected: the check is about what outcomes do to a lesson.
 */
async function quarantineCheck(server, g, lessons) {
  const candidates = lessons.filter((l) => g.about(l.content ?? "").pitfall && g.about(l.content ?? "").fix).sort((a, b) => promotionRank(a) - promotionRank(b) || (b.reinforcement_count ?? 0) - (a.reinforcement_count ?? 0));
  const chosen = candidates[0];
  if (!chosen || promotionRank(chosen) === 3) return { status: "skipped: no pitfall lesson reached scope global or a pending promotion", met: false };
  const id = lessonIdOf(chosen);
  const pitfall = g.about(chosen.content).pitfall;
  const present = async (run, runId) => learnedSources(g, (await context(server, runId, run.task)).sources).some((l) => l.id === id);
  const probe = g.mod.pitfallRun(SEED, QUARANTINE_RUNS, pitfall, { hints: true });
  const result = { lesson_id: id, pitfall, content: String(chosen.content).slice(0, 200), before: lessonState(chosen), in_context_before: await present(probe, "quarantine-probe-before"), after_each_run: [] };
  for (let k = 0; k < QUARANTINE_RUNS; k++) {
    const run = g.mod.pitfallRun(SEED, k, pitfall, { fixFails: true, hints: true });
    const runId = `quarantine-${k}`;
    const inContext = await present(run, runId);
    await writeTraces(server, runId, run, T0 + (RUNS + k) * 3600);
    await recordSteps(server, runId, run);
    const recorded = await post(server, "/v2/control/outcome", { run_id: runId, reference_id: id, outcome: "failure", signal: -1, entry_ids: [id], rationale: "applied the lesson's fix and it did not help", agent_id: AGENT });
    const now = (await listLessons(server)).find((l) => lessonIdOf(l) === id);
    result.after_each_run.push({ in_context: inContext, entries_reinforced: recorded.entries_reinforced ?? 0, skipped: (recorded.skipped_entry_ids ?? []).length, ...(lessonState(now) ?? { missing: true }) });
  }
  const last = result.after_each_run.at(-1);
  const next = g.mod.pitfallRun(SEED, QUARANTINE_RUNS + 1, pitfall, { hints: true });
  result.in_next_context = await present(next, "quarantine-probe-after");
  result.quarantined = last.promotion_state === "quarantined";
  result.quarantined_after_run = result.after_each_run.findIndex((s) => s.promotion_state === "quarantined") + 1 || null;
  result.met = result.quarantined && !result.in_next_context;
  return result;
}

/**
 * Reflect on fresh runs of exactly REFLECT_ITEMS trace items: REFLECT_WARMUP untimed, then REFLECT_REPEATS timed. On a
 * shared machine the series is repeated (up to BENCH_ATTEMPTS times) while other processes took more than 10 % of the
 * CPUs during it; the least disturbed attempt is kept.
 */
async function reflectLatency(server, g) {
  let best;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const quiet = await waitQuietMachine(QUIET_WAIT_MS);
    const monitor = interferenceMonitor();
    const series = await reflectSeries(server, g, attempt);
    const interference = monitor.stop();
    const measured = { ...series, attempt, quiet_wait_ms: quiet.waited_ms, machine_quiet_before: quiet.quiet, interference };
    if (!best || interference.other_processes_cpu_share_mean < best.interference.other_processes_cpu_share_mean) best = measured;
    if (interference.other_processes_cpu_share_mean <= MAX_DISTURBANCE) break;
    log(`reflect latency: other processes used ${Math.round(interference.other_processes_cpu_share_mean * 100)} % of the CPUs${attempt < ATTEMPTS ? ", repeating" : ""}`);
  }
  return best;
}

async function reflectSeries(server, g, attempt) {
  const times = [];
  const lessonsPer = [];
  let degraded = 0;
  for (let i = 0; i < REFLECT_WARMUP + REFLECT_REPEATS; i++) {
    const run = g.mod.reflectRun(SEED, i, REFLECT_ITEMS);
    if (run.items.length !== REFLECT_ITEMS) throw new Error(`reflect run ${i} has ${run.items.length} items`);
    const runId = `reflect-latency-${attempt}-${i}`;
    await writeTraces(server, runId, run, T0 + (RUNS + 100 + i) * 3600);
    await recordSteps(server, runId, run);
    const t = performance.now();
    const res = await post(server, "/v2/control/reflect", { run_id: runId, agent_id: AGENT });
    const ms = performance.now() - t;
    if (i < REFLECT_WARMUP) continue;
    times.push(ms);
    lessonsPer.push((res.lessons ?? []).length);
    if (res.degraded) degraded++;
  }
  return {
    items_per_run: REFLECT_ITEMS,
    step_outcomes_per_run: g.mod.reflectRun(SEED, 0, REFLECT_ITEMS).steps.length,
    warmup: REFLECT_WARMUP,
    ...summarize(times),
    mean_lessons_per_reflect: round(lessonsPer.reduce((a, b) => a + b, 0) / Math.max(1, lessonsPer.length), 2),
    degraded,
  };
}

async function baselineArm(server, g, runs, out) {
  const rows = [];
  const queryMs = [];
  out.runs = rows;
  const ask = async (run, query) => {
    const t = performance.now();
    const res = await post(server, "/v2/control/query", { run_id: BASELINE_RUN, query, limit: TOP, entry_types: ["trace"], agent_id: AGENT });
    queryMs.push(performance.now() - t);
    const top = (res.evidence ?? []).slice(0, TOP).map((e) => g.about(e.content ?? ""));
    const eligible = run.pitfall !== null && run.occurrence >= 2;
    const foreign = top.filter((c) => c.pitfall && c.fix && c.pitfall !== run.pitfall);
    return {
      top5: top.map((c) => (c.pitfall ? `${c.pitfall}${c.fix ? " (fix)" : ""}` : "other")).join(" | "),
      hit: eligible ? top.some((c) => c.pitfall === run.pitfall && c.fix) : null,
      hit_about: eligible ? top.some((c) => c.pitfall === run.pitfall) : null,
      misleading: foreign.length > 0,
      misleading_other_family: foreign.some((c) => g.familyOf(c.pitfall) !== run.family),
    };
  };
  for (const run of runs) {
    const start = await ask(run, run.task);
    const symptom = run.pitfall ? run.items.find((item) => item.kind === "symptom") : undefined;
    const failure = symptom ? await ask(run, symptom.text) : null;
    rows.push({ run: run.id, family: run.family, pitfall: run.pitfall, occurrence: run.occurrence, start, failure });
    await writeTraces(server, BASELINE_RUN, run, T0 + run.index * 3600);
    if ((run.index + 1) % 40 === 0) log(`${g.name} baseline: ${run.index + 1} of ${runs.length} runs`);
  }
  out.figures = armFigures(rows);
  out.query_ms = summarize(queryMs);
}

/** Starts a fresh server, checks the routes, runs `body(server)`; records status or error into `section`. */
async function onFreshServer(label, routes, section, body) {
  const dataDir = tempDir(`learning-${label}`);
  const server = await startServer({ dataDir, key: mintAdminKey() });
  try {
    const missing = [];
    for (const route of routes) if (!(await implemented(server, route))) missing.push(route);
    if (missing.length > 0) {
      section.status = `not implemented yet (501): ${missing.join(", ")}`;
      log(`${label}: ${section.status}`);
      return;
    }
    const started = performance.now();
    await body(server);
    section.status = "measured";
    section.seconds = round((performance.now() - started) / 1000, 1);
  } catch (e) {
    section.status = "failed";
    section.error = e instanceof ApiError ? e.message : String(e?.stack ?? e);
    log(`${label} failed: ${section.error.split("\n")[0]}`);
  } finally {
    await server.stop();
    removeDir(dataDir);
  }
}

/** Whether each target of a generator's section is met (only figures that were measured are judged). */
function judge(section) {
  const t = section.targets;
  const met = {};
  const measured = (arm) => (section[arm]?.status === "measured" ? section[arm].figures : undefined);
  const atLeast = (x, min) => x !== null && x !== undefined && x >= min;
  const atMost = (x, max) => x !== null && x !== undefined && x <= max;
  const lf = measured("loop");
  if (lf) {
    met.lesson_hit_rate = atLeast(lf.lesson_hit_rate, t.lesson_hit_rate_min);
    if (t.start_lesson_hit_rate_min !== undefined) met.start_lesson_hit_rate = atLeast(lf.start_lesson_hit_rate, t.start_lesson_hit_rate_min);
    met.misleading_context = atMost(lf.start_misleading_rate, t.misleading_context_max) && atMost(lf.misleading_failure_context_rate, t.misleading_context_max);
    met.misleading_query = atMost(lf.query_misleading_rate, t.misleading_query_max);
    met.misleading_diagnose = atMost(lf.diagnose_misleading_rate, t.misleading_diagnose_max);
    met.wrongly_quarantined = atMost(section.loop.wrongly_quarantined, t.wrongly_quarantined_max);
  }
  const nf = measured("loop_no_hints");
  if (nf) met.no_hints_hit_rate = atLeast(nf.lesson_hit_rate, t.no_hints_hit_rate_min);
  if (section.reflect_latency) met.reflect_p99 = section.reflect_latency.p99_ms <= t.reflect_p99_ms_max;
  if (section.loop?.quarantine) met.quarantine = section.loop.quarantine.met;
  return met;
}

const fmtRate = (x) => (typeof x === "number" ? `${(x * 100).toFixed(1)} %` : "—");
const withN = (h) => (h ? `${fmtRate(h.rate)} (${h.n})` : "—");

function table(section) {
  const arms = ["loop", "loop_no_hints", "loop_no_negative", "baseline"];
  const fig = (arm) => (section[arm]?.figures ? section[arm].figures : undefined);
  const t = section.targets;
  const met = section.met;
  const yes = (m) => (m === undefined ? "—" : m ? "met" : "NOT MET");
  const perArm = (f) => arms.map((arm) => (fig(arm) ? f(fig(arm), section[arm]) : "—"));
  const pct = (x) => `${Math.round(x * 100)} %`;
  const occ = (p) => (f) => ["second", "third", "fourth_on"].map((k) => fmtRate(f.points[p]?.hit_rate_by_occurrence[k].rate)).join(" / ");
  const lp = section.loop?.promotion;
  const q = section.loop?.quarantine;
  const lat = section.reflect_latency;
  const neg = (f, a) => (a.reflect_totals ? `${a.reflect_totals.negative_outcomes} / ${a.reflect_totals.negative_entries_named} / ${a.reflect_totals.negative_entries_reinforced}` : "—");
  const rows = [
    ["figure", "loop", "no hints", "no negative", "baseline (raw traces)", "target", ""],
    [`hit@${TOP}, 2nd occurrence on: failure context (n) [baseline: failure query]`, ...perArm((f) => withN(f.points.failure?.hits)), `≥ ${pct(t.lesson_hit_rate_min)}; no hints ≥ ${pct(t.no_hints_hit_rate_min)}`, `${yes(met.lesson_hit_rate)}; ${yes(met.no_hints_hit_rate)}`],
    ["  at 2nd / 3rd / 4th+ occurrence", ...perArm(occ("failure")), "", ""],
    [`hit@${TOP}: start context (n) [baseline: task query]`, ...perArm((f) => withN(f.points.start?.hits)), t.start_lesson_hit_rate_min !== undefined ? `≥ ${pct(t.start_lesson_hit_rate_min)}` : "", yes(met.start_lesson_hit_rate)],
    [`hit@${TOP}: query on the failure (n)`, ...perArm((f) => withN(f.points.query?.hits)), "", ""],
    [`hit@${TOP}: diagnose (n)`, ...perArm((f) => withN(f.points.diagnose?.hits)), "", ""],
    [`hit@${TOP}: any point (n)`, ...perArm((f) => withN(f.any_hits)), "", ""],
    ["misleading: start context (n)", ...perArm((f) => withN(f.points.start?.misleading)), `≤ ${pct(t.misleading_context_max)}`, yes(met.misleading_context)],
    ["misleading: failure context (n)", ...perArm((f) => withN(f.points.failure?.misleading)), `≤ ${pct(t.misleading_context_max)}`, yes(met.misleading_context)],
    ["misleading: query (n)", ...perArm((f) => withN(f.points.query?.misleading)), `≤ ${pct(t.misleading_query_max)}`, yes(met.misleading_query)],
    ["misleading: diagnose (n)", ...perArm((f) => withN(f.points.diagnose?.misleading)), `≤ ${pct(t.misleading_diagnose_max)}`, yes(met.misleading_diagnose)],
    ["misleading from another family: start / failure ctx / query / diagnose", ...perArm((f) => POINTS.map((p) => fmtRate(f.points[p]?.misleading_other_family_rate)).join(" / ")), "", ""],
    ["blocks with no learned source: start / failure", ...perArm((f) => ["start", "failure"].map((p) => fmtRate(f.points[p]?.empty_of_lessons?.rate)).join(" / ")), "", ""],
    ["negative outcomes / lessons named / reinforced", ...perArm(neg), "", ""],
    ["pitfall lessons wrongly quarantined", ...perArm((f, a) => String(a.wrongly_quarantined ?? "—")), `≤ ${t.wrongly_quarantined_max}`, yes(met.wrongly_quarantined)],
    ["pitfalls reaching global / seen ≥ 2×; median occurrences", lp ? `${lp.reached_global} / ${lp.pitfalls_seen_twice_or_more}; ${lp.occurrences_to_global_median ?? "—"}` : "—", "", "", "", "", ""],
    ["quarantine: quarantined and gone from next context", q ? (q.status ?? `${q.quarantined} / ${!q.in_next_context}`) : "—", "", "", "", "both", yes(met.quarantine)],
    [`reflect p50 / p99 ms, ${REFLECT_ITEMS}-item run`, lat ? `${lat.p50_ms} / ${lat.p99_ms}` : "—", "", "", "", `p99 ≤ ${t.reflect_p99_ms_max}`, yes(met.reflect_p99)],
    ["reflect decisions", ...perArm((f, a) => (a.reflect_decisions ? Object.entries(a.reflect_decisions).map(([k, v]) => `${k} ${v}`).join(", ") : "—")), "", ""],
  ];
  const lines = rows.map((r) => `| ${r.join(" | ")} |`);
  lines.splice(1, 0, "|---|---|---|---|---|---|---|");
  return lines.join("\n");
}

/** Measures one generator: its arms in order, each on a fresh server; the section is written after every arm. */
async function measureGenerator(g, section, save) {
  const problems = g.mod.checkVocabulary();
  if (problems.length > 0) {
    section.status = "failed";
    section.error = `generator vocabulary is ambiguous:\n${problems.join("\n")}`;
    log(`${g.name}: ${problems.length} vocabulary problems`);
    return;
  }
  const runs = prepareRuns(g, true);
  const runsNoHints = prepareRuns(g, false);
  const occurrences = {};
  for (const run of runs) if (run.pitfall) occurrences[run.pitfall] = run.occurrence;
  section.generator = {
    module: GENERATOR_MODULES[g.name],
    families: g.mod.FAMILIES.length,
    pitfalls: g.mod.PITFALLS.length,
    pitfall_runs: runs.filter((r) => r.pitfall).length,
    clean_runs: runs.filter((r) => !r.pitfall).length,
    runs_meeting_a_seen_pitfall: runs.filter((r) => r.occurrence >= 2).length,
    runs_with_a_directive_hint: runs.filter((r) => r.steps.some((s) => s.directive_hint)).length,
    mean_trace_items: round(runs.reduce((s, r) => s + r.items.length, 0) / Math.max(1, runs.length), 1),
    occurrences,
    ...(typeof g.mod.overlapReport === "function" ? { overlap: g.mod.overlapReport() } : {}),
  };
  log(`${g.name}: ${runs.length} runs, ${section.generator.pitfall_runs} meet a pitfall (${section.generator.runs_meeting_a_seen_pitfall} one seen before)`);

  const loopArmOf = (arm, armRuns, options) =>
    onFreshServer(`${g.name}-${arm}`, LOOP_ROUTES, section[arm], async (server) => {
      const lessons = await loopArm(server, g, armRuns, section[arm], options);
      if (!options.track) return;
      log(`${g.name} ${arm}: quarantine check`);
      section[arm].quarantine = await quarantineCheck(server, g, lessons);
      log(`${g.name} ${arm}: reflect latency`);
      section.reflect_latency = await reflectLatency(server, g);
    });
  section.loop = { arm: "loop", status: "not run", hints: true, negative_outcomes: true };
  await loopArmOf("loop", runs, { negative: true, track: true });
  save();
  section.loop_no_hints = { arm: "loop_no_hints", status: "not run", hints: false, negative_outcomes: true };
  await loopArmOf("loop_no_hints", runsNoHints, { negative: true, track: false });
  save();
  if (ABLATIONS) {
    section.loop_no_negative = { arm: "loop_no_negative", status: "not run", hints: true, negative_outcomes: false };
    await loopArmOf("loop_no_negative", runs, { negative: false, track: false });
    save();
  }
  section.baseline = { arm: "baseline", status: "not run", method: `POST /v2/control/query over one shared run "${BASELINE_RUN}" holding every earlier run's traces, limit ${TOP}, entry_types [trace]; with the task text, and with the failure text in pitfall runs` };
  await onFreshServer(`${g.name}-baseline`, BASELINE_ROUTES, section.baseline, (server) => baselineArm(server, g, runs, section.baseline));

  // A failed arm still reports what its finished runs show.
  for (const arm of ["loop", "loop_no_hints", "loop_no_negative", "baseline"]) if (section[arm]?.runs?.length && !section[arm].figures) section[arm].figures = armFigures(section[arm].runs);
  section.met = judge(section);
  section.status = "measured";
}

async function main() {
  const names = GENERATOR_CHOICE === "all" ? Object.keys(GENERATOR_MODULES) : GENERATOR_CHOICE === "both" ? ["tuning", "heldout"] : GENERATOR_CHOICE.split(",").map((n) => n.trim());
  for (const name of names) if (!GENERATOR_MODULES[name]) throw new Error(`BENCH_LEARNING_GENERATOR must be all, both or a comma list of ${Object.keys(GENERATOR_MODULES).join(", ")}, not ${GENERATOR_CHOICE}`);
  const results = {
    benchmark: "learning",
    machine: machine(),
    parameters: { generators: names, ablations: ABLATIONS, runs: RUNS, seed: SEED, pitfall_share: PITFALL_SHARE, top_k: TOP, context_max_token_budget: CONTEXT_BUDGET, reflect_items: REFLECT_ITEMS, reflect_repeats: REFLECT_REPEATS, reflect_warmup: REFLECT_WARMUP, quarantine_runs: QUARANTINE_RUNS, agent_id: AGENT, negative_rationale: NEGATIVE_RATIONALE },
  };
  for (const name of names) results[name] = { status: "not run", targets: TARGETS[name], met: {} };
  const save = () => writeResults("learning.json", results);
  for (const name of names) {
    const section = results[name];
    const g = await loadGenerator(name);
    if (g.missing) {
      section.status = `generator not available: ${g.missing}`;
      log(`${name}: ${section.status}`);
      continue;
    }
    await measureGenerator(g, section, save);
    save();
  }
  const file = save();
  const statuses = [];
  for (const name of names) {
    const section = results[name];
    const arms = ["loop", "loop_no_hints", "loop_no_negative", "baseline"].filter((a) => section[a]);
    statuses.push(section.status === "measured" ? "measured" : section.status === "failed" ? "failed" : "missing", ...arms.map((a) => section[a].status));
    process.stderr.write(`\n${name} generator: ${section.status}${arms.length ? `; ${arms.map((a) => `${a}: ${section[a].status}`).join("; ")}` : ""}\n`);
    if (section.status === "measured") process.stderr.write(`${table(section)}\n`);
  }
  process.stderr.write(`\nresults: ${path.relative(ROOT, file)}\n`);
  if (statuses.includes("failed")) return 1;
  return statuses.every((s) => s === "measured") ? 0 : 2;
}

process.exitCode = await main();
