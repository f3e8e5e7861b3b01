// Lesson extraction from a run's evidence: the built-in extractor's patterns, lineage, confidence and determinism, and
// the LLM extractor's validation and fallback, driven by an in-process fake chat model.
import { describe, expect, it } from "vitest";
import type { CandidateLesson, EvidenceItem, Extraction } from "../../src/learning/evidence.js";
import { BuiltinExtractor, extractLessons } from "../../src/learning/extraction/builtin-extractor.js";
import { LlmExtractor } from "../../src/learning/extraction/llm-extractor.js";
import { ChatError, type ChatCompleter, type ChatCompletion, type ChatRequest } from "../../src/retrieval/llm/chat-client.js";
import { IMPORTANCE_LEVELS, LESSON_TYPES } from "../../src/storage/entry-record.js";

type Kind = EvidenceItem["kind"];
const PREFIX: Partial<Record<Kind, string>> = { step_outcome: "so", run_outcome: "out" };

/** Builds evidence items with ids in order: `ent_1`, `so_2`, … */
function run(): { item(kind: Kind, content: string, extra?: Partial<EvidenceItem>): EvidenceItem } {
  let seq = 0;
  return {
    item(kind, content, extra = {}) {
      seq++;
      const base: EvidenceItem = {
        id: `${PREFIX[kind] ?? "ent"}_${seq}`,
        kind,
        content,
        createdAt: 1_700_000_000_000 + seq * 1000,
        agentId: "agent-1",
        stepId: "",
        stepName: "",
        outcome: "",
        signal: 0,
        directiveHint: "",
      };
      return { ...base, ...extra };
    },
  };
}

function step(stepName: string, outcome: "success" | "failure" | "partial" | "neutral", extra: Partial<EvidenceItem> = {}): Partial<EvidenceItem> {
  return { stepId: `step-${stepName}`, stepName, outcome, signal: outcome === "success" ? 1 : outcome === "failure" ? -1 : 0, ...extra };
}

function expectValid(extraction: Extraction, evidence: readonly EvidenceItem[]): void {
  const ids = new Set(evidence.map((e) => e.id));
  expect(extraction.confidence).toBeGreaterThanOrEqual(0);
  expect(extraction.confidence).toBeLessThanOrEqual(1);
  expect(extraction.lessons.length).toBeLessThanOrEqual(20);
  for (const lesson of extraction.lessons) {
    expect(lesson.content.trim()).not.toBe("");
    expect(LESSON_TYPES).toContain(lesson.lessonType);
    expect(IMPORTANCE_LEVELS).toContain(lesson.importance);
    expect(lesson.scope).toBe("run");
    expect(lesson.confidence).toBeGreaterThanOrEqual(0);
    expect(lesson.confidence).toBeLessThanOrEqual(1);
    expect(lesson.sourceIds.length).toBeGreaterThan(0);
    expect(new Set(lesson.sourceIds).size).toBe(lesson.sourceIds.length);
    for (const id of lesson.sourceIds) expect(ids.has(id)).toBe(true);
  }
  const contents = extraction.lessons.map((l) => l.content.toLowerCase().replace(/\W+/gu, " ").trim());
  expect(new Set(contents).size).toBe(contents.length);
}

function only(extraction: Extraction, type: CandidateLesson["lessonType"]): CandidateLesson[] {
  return extraction.lessons.filter((l) => l.lessonType === type);
}

/** A run that failed on npm's registry, switched to a mirror, and succeeded. */
function registryRun(): EvidenceItem[] {
  const { item } = run();
  return [
    item("trace", "npm install failed with ETIMEDOUT while fetching from registry.npmjs.org", { stepId: "step-install", stepName: "install" }),
    item("step_outcome", "Used the default registry", step("install", "failure")),
    item("trace", "Switched to the internal mirror registry and now it works.", { stepId: "step-install", stepName: "install" }),
    item("step_outcome", "Dependencies installed", step("install", "success")),
  ];
}

describe("BuiltinExtractor", () => {
  it("turns a failure and its fix into a failure lesson in the evidence's words, with lineage", async () => {
    const evidence = registryRun();
    const extraction = await new BuiltinExtractor().extract(evidence);
    expectValid(extraction, evidence);
    const [lesson, ...others] = only(extraction, "failure");
    expect(others).toEqual([]);
    expect(lesson?.content).toBe(
      "When npm install failed with ETIMEDOUT while fetching from registry.npmjs.org, switch to the internal mirror registry (instead of using the default registry).",
    );
    expect(lesson?.conditions).toEqual(["when npm install failed with ETIMEDOUT while fetching from registry.npmjs.org", "in step install"]);
    expect(lesson?.sourceIds).toEqual(["ent_1", "so_2", "ent_3", "so_4"]);
    expect(lesson?.rationale).toContain("ent_1");
    expect(lesson?.rationale).toContain("fix seen in ent_3");
    expect(lesson?.rationale).toContain("so_4");
    expect(lesson?.importance).toBe("medium");
    expect(extraction.summary).toMatch(/^1 lesson from 4 items: 1 failure pattern \(npm install failed/u);
    expect(extraction.degraded).toBe(false);
    expect(extraction.fallbackReason).toBe("");
  });

  it("reads a fix stated with its symptom in one sentence", () => {
    const { item } = run();
    const evidence = [
      item("trace", "Deploy to staging returned HTTP 503 Service Unavailable."),
      item("trace", "The 503 was fixed by waiting for the health check before routing traffic."),
    ];
    const [lesson] = extractLessons(evidence).lessons;
    expect(lesson?.lessonType).toBe("failure");
    expect(lesson?.content).toBe("When deploy to staging returned HTTP 503 Service Unavailable, fix it by waiting for the health check before routing traffic.");
    expect(lesson?.sourceIds).toEqual(["ent_1", "ent_2"]);

    const alone = extractLessons([run().item("working_memory", "We fixed the ECONNREFUSED error by starting the postgres container first.")]);
    expect(alone.lessons[0]?.content).toBe("When you hit the ECONNREFUSED error, fix it by starting the postgres container first.");
  });

  it("keeps a failure with no fix as a lesson of what to avoid, less confident than a fixed one", () => {
    const { item } = run();
    const evidence = [
      item("trace", "Tried to build the docker image with the alpine base but it crashed with a segfault in node-gyp."),
      item("trace", "Looked at the build logs."),
      item("trace", "Retrying did not help."),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    const [lesson, ...others] = extraction.lessons;
    expect(others).toEqual([]);
    expect(lesson?.lessonType).toBe("failure");
    expect(lesson?.content).toContain("building the docker image with the alpine base crashed with a segfault in node-gyp");
    expect(lesson?.content).toContain("no fix was found");
    expect(lesson?.rationale).toContain("no fix was seen");
    expect(lesson?.sourceIds).toEqual(["ent_1", "ent_3"]);
    const fixed = only(extractLessons(registryRun()), "failure")[0];
    expect(lesson?.confidence ?? 1).toBeLessThan(fixed?.confidence ?? 0);
  });

  it("turns directive hints into high-confidence lessons, verbatim", () => {
    const { item } = run();
    const hint = "Run the test suite with --runInBand when tests are flaky.";
    const evidence = [
      item("step_outcome", "Tests flaky on CI, tried rerunning", step("test", "failure", { signal: -0.5, directiveHint: hint })),
      item("step_outcome", "Blue-green rollout went fine", step("deploy", "success", { directiveHint: "Deploy with the blue-green strategy." })),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    const failure = extraction.lessons.find((l) => l.content === hint);
    expect(failure?.lessonType).toBe("failure");
    expect(failure?.importance).toBe("high");
    expect(failure?.confidence).toBeGreaterThanOrEqual(0.8);
    expect(failure?.conditions).toEqual(["in step test", "when tests flaky on CI, tried rerunning"]);
    expect(failure?.sourceIds).toEqual(["so_1"]);
    expect(failure?.rationale).toContain("so_1");
    const success = extraction.lessons.find((l) => l.content === "Deploy with the blue-green strategy.");
    expect(success?.lessonType).toBe("success");
    expect(success?.confidence).toBeGreaterThanOrEqual(0.8);
    // The hint already says what to do about the failed step: no second, heuristic lesson for it.
    expect(extraction.lessons).toHaveLength(2);
  });

  it("finds preferences", () => {
    const { item } = run();
    const evidence = [
      item("fact", "The user prefers pnpm over npm."),
      item("trace", "Please always use the staging credentials from vault. The team wants small pull requests."),
      item("trace", "Compiled 14 modules."),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    expect(only(extraction, "preference").map((l) => l.content).sort()).toEqual([
      "Please always use the staging credentials from vault.",
      "The team wants small pull requests.",
      "The user prefers pnpm over npm.",
    ]);
    expect(extraction.lessons.find((l) => l.content.startsWith("The user"))?.sourceIds).toEqual(["ent_1"]);
  });

  it("turns stated never/always/must imperatives into rules", () => {
    const { item } = run();
    const evidence = [
      item("trace", "Note: never run migrations without a lock timeout. Always tag releases before deploying."),
      item("fact", "Do not force-push to main."),
      item("trace", "The build never finished yesterday, oddly."),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    const rules = only(extraction, "rule");
    expect(rules.map((l) => l.content).sort()).toEqual(["Always tag releases before deploying.", "Do not force-push to main.", "Never run migrations without a lock timeout."]);
    for (const rule of rules) expect(rule.importance).toBe("high");
    expect(rules.find((l) => l.content.startsWith("Always"))?.conditions).toEqual(["before deploying"]);
  });

  it("turns a failure seen repeatedly into a rule", () => {
    const { item } = run();
    const evidence = [
      item("step_outcome", "Deploy timed out after 60s", step("deploy", "failure")),
      item("trace", "Waiting for the queue."),
      item("step_outcome", "Deploy timed out after 60s again", step("deploy", "failure")),
      item("step_outcome", "Raised the deploy timeout to 300s", step("deploy", "success")),
      item("trace", "psql: FATAL password authentication failed for user app", { stepId: "m1", stepName: "migrate" }),
      item("trace", "Checked the environment."),
      item("trace", "psql: FATAL password authentication failed for user app", { stepId: "m2", stepName: "seed" }),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    const rules = only(extraction, "rule");
    expect(rules).toHaveLength(2);
    const deploy = rules.find((l) => l.content.includes("deploy timeout"));
    expect(deploy?.content).toBe("When deploy timed out after 60s, always raise the deploy timeout to 300s (it failed 2 times).");
    expect(deploy?.sourceIds).toEqual(["so_1", "so_3", "so_4"]);
    expect(deploy?.importance).toBe("high");
    const auth = rules.find((l) => l.content.includes("password authentication"));
    expect(auth?.content).toMatch(/^Never retry step migrate unchanged when psql: FATAL password authentication failed for user app: it failed 2 times\.$/u);
    expect(auth?.sourceIds).toEqual(["ent_5", "ent_7"]);
    expect(only(extraction, "failure")).toEqual([]);
  });

  it("marks data loss, security and outages critical", () => {
    const { item } = run();
    const evidence = [item("trace", "Connection refused on port 5432, and the database lost data after the crash.")];
    expect(extractLessons(evidence).lessons[0]?.importance).toBe("critical");
  });

  it("does not re-propose stored lessons and rules", () => {
    const { item } = run();
    const evidence = [item("lesson", "Never deploy on Fridays."), item("rule", "Always run the linter before committing.")];
    const extraction = extractLessons(evidence);
    expect(extraction.lessons).toEqual([]);
    expect(extraction.summary).toBe("No lessons from 2 items: no failures, fixes, rules or preferences were found.");
    expect(extraction.confidence).toBe(0);
  });

  it("merges duplicates and unites their lineage, and never merges opposite rules", () => {
    const { item } = run();
    const evidence = [
      item("trace", "Never call the billing API without an idempotency key."),
      item("trace", "never call the billing API without an idempotency key!"),
      item("fact", "Rule: never call the billing API without an idempotency key."),
      item("step_outcome", "Billed twice", step("bill", "failure", { directiveHint: "Never call the billing API without an idempotency key." })),
      item("trace", "Always call the billing API without an idempotency key."),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    const never = extraction.lessons.filter((l) => /^never call/iu.test(l.content));
    expect(never).toHaveLength(1);
    expect(never[0]?.sourceIds).toEqual(["ent_1", "ent_2", "ent_3", "so_4"]);
    expect(extraction.lessons.filter((l) => /^always call/iu.test(l.content))).toHaveLength(1);
  });

  it("gives the same output for the same evidence", () => {
    const { item } = run();
    const evidence = [
      ...registryRun(),
      item("trace", "The user prefers concise answers."),
      item("trace", "Error: cannot find module './dist/index.js'."),
      item("step_outcome", "Build failed", step("build", "failure", { directiveHint: "Run the build before the tests." })),
      item("run_outcome", "Shipped after pinning node to 20.", { outcome: "success", signal: 1 }),
    ];
    const first = extractLessons(evidence);
    const second = extractLessons(evidence);
    expect(second).toEqual(first);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
  });

  it("returns nothing, an empty summary and zero confidence for no evidence", async () => {
    expect(await new BuiltinExtractor().extract([])).toEqual({ lessons: [], summary: "", confidence: 0, degraded: false, fallbackReason: "" });
  });

  it("grows confidence with the evidence", () => {
    const once = extractLessons([run().item("fact", "The user prefers tabs over spaces.")]).lessons[0];
    const { item } = run();
    const thrice = extractLessons([
      item("fact", "The user prefers tabs over spaces."),
      item("trace", "The user prefers tabs over spaces."),
      item("trace", "The user prefers tabs over spaces."),
    ]).lessons[0];
    expect(thrice?.confidence ?? 0).toBeGreaterThan(once?.confidence ?? 1);
    expect(thrice?.sourceIds).toHaveLength(3);

    // A fix confirmed by the step's success is surer than a fix only reported.
    const reported = only(extractLessons(registryRun().slice(0, 3)), "failure")[0];
    const confirmed = only(extractLessons(registryRun()), "failure")[0];
    expect(confirmed?.confidence ?? 0).toBeGreaterThan(reported?.confidence ?? 1);
  });

  it("reads a success with its stated approach", () => {
    const { item } = run();
    const evidence = [
      item("step_outcome", "Retried with exponential backoff, which worked.", step("fetch", "success")),
      item("trace", "Using the build cache worked because the lockfile was unchanged."),
      item("step_outcome", "Deploy succeeded.", step("deploy", "success")),
    ];
    const extraction = extractLessons(evidence);
    expectValid(extraction, evidence);
    expect(only(extraction, "success").map((l) => l.content)).toEqual([
      "For step fetch, retry with exponential backoff.",
      "Using the build cache worked because the lockfile was unchanged.",
    ]);
  });

  it("extracts from 200 items (and 5,000) within the lesson cap", () => {
    const { item } = run();
    const texts = [
      "Reading the config file from disk.",
      "npm install failed with ETIMEDOUT while fetching package {n}.",
      "Switched to the internal mirror registry and now it works.",
      "The API returned HTTP 429 Too Many Requests for batch {n}.",
      "Never call the billing API without an idempotency key.",
      "User prefers concise answers with code samples.",
      "Retried with exponential backoff, which worked for batch {n}.",
      "Error: cannot find module './dist/index.js' in package {n}.",
    ];
    const build = (n: number): EvidenceItem[] =>
      Array.from({ length: n }, (_, i) => {
        const content = (texts[(i * 7) % texts.length] ?? "").replace("{n}", String(i));
        return i % 9 === 4 ? item("step_outcome", content, step(`s${i % 5}`, i % 2 === 1 ? "failure" : "success")) : item("trace", content);
      });
    for (const evidence of [build(200), build(5000)]) {
      const extraction = extractLessons(evidence);
      expectValid(extraction, evidence);
      expect(extraction.lessons.length).toBeGreaterThan(0);
    }
  });
});

/** A chat model in the test's hands: replies with `reply(request)`, which may throw or never settle. */
class FakeChat implements ChatCompleter {
  readonly requests: ChatRequest[] = [];
  constructor(private readonly reply: (request: ChatRequest) => Promise<string>) {}

  async complete(request: ChatRequest): Promise<ChatCompletion> {
    this.requests.push(request);
    return { text: await this.reply(request), promptTokens: 10, completionTokens: 5 };
  }
}

const replyWith = (text: string) => new FakeChat(() => Promise.resolve(text));
const llm = (chat: ChatCompleter, timeoutMs = 1000) => new LlmExtractor(chat, new BuiltinExtractor(), { timeoutMs });

describe("LlmExtractor", () => {
  const evidence = registryRun();

  it("asks the model with bounded evidence and keeps its valid lessons, scoped to the run", async () => {
    const reply = [
      "Here you go:",
      "```json",
      JSON.stringify({
        lessons: [
          {
            content: "When npm install times out on registry.npmjs.org, use the internal mirror registry.",
            lesson_type: "failure",
            importance: "high",
            conditions: ["when npm install times out", ""],
            rationale: "ent_1 and so_2 failed; ent_3 fixed it.",
            confidence: 0.9,
            source_ids: ["ent_1", "so_2", "ent_3", "ent_999"],
            scope: "global",
          },
        ],
        summary: "The install step needs the mirror registry.",
      }),
      "```",
    ].join("\n");
    const chat = replyWith(reply);
    const extraction = await llm(chat).extract(evidence);
    expect(extraction).toEqual({
      lessons: [
        {
          content: "When npm install times out on registry.npmjs.org, use the internal mirror registry.",
          lessonType: "failure",
          scope: "run",
          importance: "high",
          conditions: ["when npm install times out"],
          rationale: "ent_1 and so_2 failed; ent_3 fixed it.",
          confidence: 0.9,
          sourceIds: ["ent_1", "so_2", "ent_3"],
        },
      ],
      summary: "The install step needs the mirror registry.",
      confidence: 0.9,
      degraded: false,
      fallbackReason: "",
      readsAllEvidence: true,
    });
    const [request] = chat.requests;
    expect(request?.purpose).toBe("reflect");
    expect(request?.temperature).toBe(0);
    expect(request?.signal).toBeInstanceOf(AbortSignal);
    const prompt = request?.messages.map((m) => m.content).join("\n") ?? "";
    for (const item of evidence) expect(prompt).toContain(`[${item.id}]`);
    expect(prompt).toContain("outcome=failure");
  });

  it("shows at most 120 items, each cut to about 400 characters", async () => {
    const { item } = run();
    const many = Array.from({ length: 300 }, (_, i) => item("trace", `line ${i} ${"x".repeat(2000)}`));
    many.push(item("step_outcome", "Build failed", step("build", "failure", { directiveHint: "Run the build before the tests." })));
    const chat = replyWith('{"lessons":[],"summary":""}');
    await llm(chat).extract(many);
    const user = chat.requests[0]?.messages.find((m) => m.role === "user")?.content ?? "";
    const lines = user.split("\n").filter((l) => l.startsWith("["));
    expect(lines).toHaveLength(120);
    for (const line of lines) expect(line.length).toBeLessThan(900);
    expect(user).toContain("Run the build before the tests.");
  });

  it("drops lessons with invalid fields and normalises the rest", async () => {
    const lessons = [
      { content: "Unknown type.", lesson_type: "insight", importance: "high", source_ids: ["ent_1"] },
      { content: "Unknown importance.", lesson_type: "rule", importance: "urgent", source_ids: ["ent_1"] },
      { content: "No known source.", lesson_type: "rule", importance: "high", source_ids: ["ent_42"] },
      { content: "   ", lesson_type: "rule", importance: "high", source_ids: ["ent_1"] },
      { content: "Always use the mirror registry.", lesson_type: "Rule", importance: "HIGH", confidence: "very", source_ids: ["ent_3"] },
      { content: "Pin the registry in .npmrc.", lesson_type: "success", confidence: 7, conditions: "always", source_ids: ["ent_3", "ent_3"] },
      "not an object",
    ];
    const extraction = await llm(replyWith(JSON.stringify({ lessons }))).extract(evidence);
    expect(extraction.degraded).toBe(false);
    // Most important first; a missing importance is medium, a non-numeric confidence 0.5, one above 1 is clamped.
    expect(extraction.lessons).toEqual([
      { content: "Always use the mirror registry.", lessonType: "rule", scope: "run", importance: "high", conditions: [], rationale: "", confidence: 0.5, sourceIds: ["ent_3"] },
      { content: "Pin the registry in .npmrc.", lessonType: "success", scope: "run", importance: "medium", conditions: [], rationale: "", confidence: 1, sourceIds: ["ent_3"] },
    ]);
    expect(extraction.summary).toBe("2 lessons from 4 items: 1 rule, 1 success pattern.");
  });

  it("falls back, degraded, when the reply is not JSON", async () => {
    const extraction = await llm(replyWith("Sorry, I cannot help with that.")).extract(evidence);
    expect(extraction.degraded).toBe(true);
    expect(extraction.fallbackReason).toBe('LLM extraction failed (reply is not JSON: "Sorry, I cannot help with that."); built-in extractor used');
    expect(extraction.lessons).toEqual(extractLessons(evidence).lessons);
  });

  it("falls back, degraded, when no lesson of the reply is valid", async () => {
    const reply = JSON.stringify({ lessons: [{ content: "x", lesson_type: "failure", source_ids: ["nope"] }], summary: "s" });
    const extraction = await llm(replyWith(reply)).extract(evidence);
    expect(extraction.degraded).toBe(true);
    expect(extraction.fallbackReason).toBe("LLM extraction returned no valid lesson (1 invalid); built-in extractor used");
    expect(extraction.lessons.length).toBeGreaterThan(0);
  });

  it("is not degraded when neither the model nor the fallback finds a lesson", async () => {
    const quiet = [run().item("trace", "Compiled 14 modules.")];
    const extraction = await llm(replyWith('{"lessons":[],"summary":"Nothing to learn."}')).extract(quiet);
    expect(extraction).toEqual({ lessons: [], summary: "Nothing to learn.", confidence: 0, degraded: false, fallbackReason: "" });
  });

  it("falls back, degraded, on a chat error, without the key or the provider's body", async () => {
    const key = "sk-secret-0123456789";
    const failing = new FakeChat(() => Promise.reject(new ChatError(`LLM call (reflect) to http://llm/v1/chat/completions failed with HTTP 503: ${"overloaded ".repeat(40)}`, "error", 503)));
    const extraction = await llm(failing).extract(evidence);
    expect(extraction.degraded).toBe(true);
    expect(extraction.fallbackReason).toBe("LLM extraction failed (HTTP 503); built-in extractor used");
    expect(extraction.lessons).toEqual(extractLessons(evidence).lessons);

    const refused = new FakeChat(() => Promise.reject(new ChatError("LLM call (reflect) to http://llm/v1/chat/completions failed: connect ECONNREFUSED", "error")));
    const second = await llm(refused).extract(evidence);
    expect(second.fallbackReason).toBe("LLM extraction failed (error: LLM call (reflect) to http://llm/v1/chat/completions failed: connect ECONNREFUSED); built-in extractor used");

    const odd = new FakeChat(() => Promise.reject(new TypeError(`bad header Bearer ${key}`)));
    const third = await llm(odd).extract(evidence);
    expect(third.fallbackReason).toBe("LLM extraction failed (unexpected TypeError); built-in extractor used");
    expect(third.fallbackReason).not.toContain(key);
  });

  it("falls back, degraded, on a timeout, even from a model that ignores the signal", async () => {
    const timedOut = new FakeChat(() => Promise.reject(new ChatError("LLM call (reflect) timed out after 50 ms", "timeout")));
    expect((await llm(timedOut).extract(evidence)).fallbackReason).toBe("LLM extraction failed (timeout); built-in extractor used");

    const stalled = new FakeChat(() => new Promise<string>(() => {}));
    const extraction = await llm(stalled, 30).extract(evidence);
    expect(extraction.degraded).toBe(true);
    expect(extraction.fallbackReason).toBe("LLM extraction failed (timeout); built-in extractor used");
    expect(extraction.lessons.length).toBeGreaterThan(0);
  });

  it("falls back when the caller cancels", async () => {
    const controller = new AbortController();
    const stalled = new FakeChat(() => {
      controller.abort();
      return new Promise<string>(() => {});
    });
    const extraction = await llm(stalled, 10_000).extract(evidence, controller.signal);
    expect(extraction.fallbackReason).toBe("LLM extraction failed (cancelled); built-in extractor used");
  });

  it("does not call the model without evidence", async () => {
    const chat = replyWith("{}");
    expect(await llm(chat).extract([])).toEqual({ lessons: [], summary: "", confidence: 0, degraded: false, fallbackReason: "" });
    expect(chat.requests).toEqual([]);
  });
});
