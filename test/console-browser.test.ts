// Drives the web console in a real browser (Debian's chromium through playwright-core) against a real server: sign-in,
// every page showing seeded data, a lesson promotion accepted from the UI, sign-out. Screenshots go to
// test-results/console/; with UPDATE_README_SCREENSHOT=1 the query page also goes to docs/console.png (the README's
// picture), so that an ordinary run never changes a tracked file.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "./harness/child-server.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const CHROMIUM = "/usr/bin/chromium";
const BUILT = "dist/console/index.html";
const SHOTS = "test-results/console";
/** Bound of every wait on the page: generous for a loaded 2-core CI machine, never a fixed sleep. */
const WAIT_MS = 20_000;
/** The admin's charts need the metrics sampler's first interval (5 s) to pass, and the page's refresh to see it. */
const CHART_WAIT_MS = 30_000;

const RUN = "release-checklist";
const OTHER_RUN = "release-checklist-2";
const LESSON = "Run the canary for fifteen minutes before promoting a release to production.";
const FACTS = [
  { agent: "planner", text: "The staging database migration must run before the API deploy." },
  { agent: "planner", text: "Deploys to production happen on Tuesdays after the canary passes." },
  { agent: "coder", text: "The canary checks the error rate and the p99 latency for fifteen minutes." },
  { agent: "coder", text: "Release notes list breaking changes first, then features, then fixes." },
];

/** Latest modification time of the files under `dir`. */
function newestFile(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Builds the console when `make build` has not, or when a console source changed since: a stale bundle tests old code. */
function ensureConsoleBuilt(): void {
  if (fs.existsSync(BUILT) && fs.statSync(BUILT).mtimeMs >= newestFile("console")) return;
  // vitest sets NODE_ENV=test, which would make Vite bundle Preact's debug build: build what `make build` builds.
  const build = spawnSync("npx", ["vite", "build", "--config", "console/vite.config.ts"], {
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production" },
  });
  if (build.status !== 0) throw new Error("console build failed");
}

type Json = Record<string, unknown>;

let server: TestServer;
let consoleUrl: string;
let browser: Browser;
let username: string;
let apiKey: string;
let lessonId: string;

async function rest(key: string, route: string, body: Json): Promise<Json> {
  const response = await fetch(`${server.baseUrl}/v2/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${route}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function lessonOf(key: string, id: string): Promise<Json> {
  const body = await rest(key, "control/lessons", { limit: 500 });
  const found = (body["lessons"] as Json[]).find((lesson) => lesson["id"] === id);
  if (!found) throw new Error(`lesson ${id} not listed`);
  return found;
}

/** What a person would set up before opening the console: a run with facts, activity, agents and a handoff; a project
 * with two prompt versions and a skill with two versions; a lesson learned in two runs, so proposed for promotion. */
async function seed(key: string): Promise<void> {
  for (const fact of FACTS) await rest(key, "control/remember", { session_id: RUN, agent_id: fact.agent, content: fact.text });
  await rest(key, "control/activities/append", {
    run_id: RUN,
    agent_id: "coder",
    activity: { type: "tool_call", payload: "Ran the canary script against staging: all checks green.", tool_name: "bash" },
  });
  await rest(key, "control/retention/set", { run_id: RUN, policy: { rules: [{ entry_type: "trace", max_age_seconds: 2_592_000 }] } });
  await rest(key, "control/agents/register", { run_id: RUN, agent_id: "planner", role: "planner", capabilities: ["planning"] });
  await rest(key, "control/agents/register", { run_id: RUN, agent_id: "coder", role: "coder", capabilities: ["code", "deploy"] });
  await rest(key, "control/handoff", {
    run_id: RUN,
    task_id: "task-canary",
    from_agent_id: "planner",
    to_agent_id: "coder",
    content: "Run the canary on staging and report the p99 latency.",
    requested_action: "execute",
  });

  const project = (await rest(key, "control/projects", { name: "Release bot", description: "Writes release notes." }))["project"] as Json;
  const projectId = String(project["project_id"]);
  await rest(key, "control/projects/agents", {
    project_id: projectId,
    agent_id: "release-writer",
    role: "writer",
    system_prompt_content: "You write release notes.\nKeep them short.",
  });
  await rest(key, "control/prompt/set", {
    project_id: projectId,
    agent_id: "release-writer",
    content: "You write release notes.\nKeep them short and list breaking changes first.",
    activate: true,
  });
  const skill = (await rest(key, "control/skills", {
    project_id: projectId,
    name: "summarise_changelog",
    description: "Summarise a changelog.",
    instructions: "Read the changelog.\nList the features.",
  }))["skill"] as Json;
  await rest(key, "control/skills/update", {
    skill_id: skill["skill_id"],
    instructions: "Read the changelog.\nList the breaking changes first.\nList the features.",
    activate: true,
  });

  const lesson = { content: LESSON, lesson_type: "success" };
  const first = await rest(key, "control/reflect", { run_id: RUN, lessons: [lesson], confidence: 0.6 });
  lessonId = String((first["decisions"] as Json[])[0]?.["lesson_id"]);
  const again = await rest(key, "control/reflect", { run_id: OTHER_RUN, lessons: [lesson], confidence: 0.6 });
  expect((again["decisions"] as Json[])[0]).toMatchObject({ decision: "merged", lesson_id: lessonId, promotion_state: "proposed" });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function visible(locator: Locator, timeout = WAIT_MS): Promise<Locator> {
  await locator.first().waitFor({ state: "visible", timeout });
  return locator;
}

async function signIn(context: BrowserContext, user: string, key: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${consoleUrl}/`);
  await visible(page.getByRole("form", { name: "Sign in" }));
  await page.getByLabel("Username").fill(user);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await visible(page.getByRole("heading", { name: "Runs" }));
  return page;
}

/** Script errors and CSP violations of every page; a refused request (a 401 before sign-in) is expected, not one. */
const pageErrors: string[] = [];

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  context.on("page", (page) => {
    page.on("pageerror", (error) => pageErrors.push(`${page.url()}: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) pageErrors.push(`${page.url()}: ${message.text()}`);
    });
  });
  return context;
}

/** Runs a script in the page: given as text, so this Node-typed file needs no DOM types. */
function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

beforeAll(async () => {
  ensureConsoleBuilt();
  fs.mkdirSync(SHOTS, { recursive: true });
  server = await startTestServer({ SERVICE_CONSOLE_PORT: String(await freePort()) });
  consoleUrl = `http://127.0.0.1:${server.engram.consolePort}`;
  username = `console-${randomUUID().slice(0, 8)}`;
  apiKey = await createUser(server.baseUrl, server.adminKey, username);
  await seed(apiKey);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Root in a container has no user namespaces for the sandbox, and /dev/shm is small.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe("web console in a real browser", () => {
  let context: BrowserContext;
  let page: Page;
  let cookie = "";

  it("refuses a wrong key, then signs in without the key reaching page content, storage or script-readable cookies", async () => {
    context = await newContext();
    page = await context.newPage();
    await page.goto(`${consoleUrl}/#/lessons`);
    await visible(page.getByRole("form", { name: "Sign in" }));
    await expect.poll(() => inPage<string>(page, "location.hash")).toBe("#/sign-in");
    await shot(page, "sign-in");

    await page.getByLabel("Username").fill(username);
    await page.getByLabel("API key").fill(`${apiKey}x`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await visible(page.getByRole("alert").filter({ hasText: "invalid username or API key" }));

    await page.getByLabel("API key").fill(apiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    // Back where the person was going before sign-in.
    await visible(page.getByRole("heading", { name: "Lessons" }));
    expect(await inPage<string>(page, "location.hash")).toBe("#/lessons");

    expect(await page.content()).not.toContain(apiKey);
    expect(page.url()).not.toContain(apiKey);
    const stored = await inPage<{ local: string; session: string; cookie: string }>(
      page,
      "({ local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }), cookie: document.cookie })",
    );
    expect(JSON.stringify(stored)).not.toContain(apiKey);
    // The session cookie is HttpOnly: script sees no cookie at all.
    expect(stored.cookie).not.toContain("engram_console");
    const cookies = await context.cookies(consoleUrl);
    const session = cookies.find((c) => c.name === "engram_console");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(session?.value).not.toContain(apiKey);
    cookie = session?.value ?? "";
    expect(cookie).not.toBe("");
  }, 60_000);

  it("lists the run on the runs page, and the search narrows the list", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Runs" }).click();
    const row = page.getByRole("table", { name: "Runs" }).getByRole("row").filter({ hasText: RUN });
    await visible(row);
    await expect.poll(() => row.first().textContent()).toContain("planner");
    await shot(page, "runs");

    const search = page.getByRole("searchbox", { name: "Search runs" });
    await search.fill("coder");
    await visible(row);
    await search.fill("no-such-run-anywhere");
    await visible(page.getByText("No run matches the search."));
    await search.fill("");
    await visible(row);
  }, 60_000);

  it("shows the run's activity timeline, its agents and the handoff between them", async () => {
    await page.getByRole("link", { name: RUN, exact: true }).click();
    await visible(page.getByRole("heading", { name: RUN }));
    const timeline = page.locator(".timeline-item");
    for (const fact of FACTS) await visible(timeline.filter({ hasText: fact.text }));
    const toolCall = timeline.filter({ hasText: "Ran the canary script against staging" });
    await visible(toolCall);
    // The tool call's provenance: a tool's output, named, untrusted by the default policy.
    expect(await toolCall.locator(".provenance .badge").allTextContents()).toEqual(["from tool", "untrusted"]);
    await visible(toolCall.locator(".provenance-where").filter({ hasText: "bash" }));
    await expect.poll(() => timeline.count()).toBeGreaterThanOrEqual(FACTS.length + 1);

    const agents = page.getByRole("table", { name: "Agents of the run" });
    await visible(agents.getByRole("row").filter({ hasText: "planner" }));
    await visible(agents.getByRole("row").filter({ hasText: "coder" }));

    const handoff = page.locator(".handoff").filter({ hasText: "Run the canary on staging and report the p99 latency." });
    await visible(handoff);
    expect(await handoff.locator(".agent-chip").allTextContents()).toEqual(["planner", "coder"]);
    await visible(handoff.getByText("pending"));

    const retention = page.getByRole("table", { name: "Retention policy of the run" });
    await visible(retention.getByRole("row").filter({ hasText: "trace" }).filter({ hasText: "30 days" }));
    await shot(page, "run");
  }, 60_000);

  it("answers a question in the query playground with cited evidence and per-signal bars", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Query" }).click();
    await page.getByLabel("Run", { exact: true }).selectOption(RUN, { timeout: WAIT_MS });
    await page.getByLabel("Question").fill("When do deploys to production happen?");
    await page.getByRole("button", { name: "Ask" }).click();

    const answer = await visible(page.locator(".answer-text"));
    await expect.poll(() => answer.textContent()).toContain("Tuesdays");
    const evidence = page.locator(".evidence");
    await visible(evidence);
    const cited = page.locator(".evidence.cited");
    await visible(cited);
    await expect.poll(() => cited.first().textContent()).toContain("Tuesdays");
    await visible(cited.first().locator(".provenance").getByText("trusted", { exact: true }));
    // Each ranked item shows its fusion signals as bars; the cited item's lexical or semantic bar has a width.
    const signalNames = await cited.first().locator(".bar-name").allTextContents();
    expect(signalNames).toEqual(expect.arrayContaining(["score", "semantic", "lexical", "recency"]));
    const fills = await cited.first().locator(".bar.tone-semantic .fill, .bar.tone-lexical .fill").all();
    const widths = await Promise.all(fills.map(async (fill) => parseFloat(/width:\s*([\d.]+)%/.exec((await fill.getAttribute("style")) ?? "")?.[1] ?? "0")));
    expect(Math.max(...widths)).toBeGreaterThan(0);
    await shot(page, "query");
    if (process.env["UPDATE_README_SCREENSHOT"] === "1") await page.screenshot({ path: "docs/console.png" });
  }, 60_000);

  it("previews the context block with its token-budget gauge and the items the budget dropped", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Context" }).click();
    await page.getByLabel("Run", { exact: true }).selectOption(RUN, { timeout: WAIT_MS });
    await page.getByLabel("Topic").fill("canary deploy release");
    await page.getByLabel("Token budget", { exact: true }).fill("40");
    await page.getByRole("button", { name: "Preview" }).click();

    const gauge = await visible(page.getByRole("meter", { name: "Token budget" }));
    expect(await gauge.getAttribute("aria-valuemax")).toBe("40");
    const used = Number(await gauge.getAttribute("aria-valuenow"));
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(40);
    await visible(page.locator(".context-block"));
    // A 40-token budget cannot hold every seeded entry: the dropped ones are listed.
    await visible(page.locator(".source.dropped"));
    await shot(page, "context");
  }, 60_000);

  it("accepts a proposed lesson promotion from the lessons page, and the API sees it", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Lessons" }).click();
    const card = page.locator("li.lesson").filter({ hasText: LESSON });
    await visible(card);
    await visible(card.locator(".promotion").getByText("proposed"));
    await visible(card.getByText("global"));
    expect(await card.getByRole("img", { name: /^confidence/ }).count()).toBe(1);
    await shot(page, "lessons");

    await card.getByRole("button", { name: "Accept" }).click();
    await visible(card.getByText("no promotion pending"));
    await visible(card.getByText("scope global"));
    await card.getByText(/^Audit trail/).click();
    await visible(card.locator(".audit-list li").filter({ hasText: "accepted" }));

    const stored = await lessonOf(apiKey, lessonId);
    expect(stored).toMatchObject({ scope: "global", promotion_state: "" });
    const moves = (stored["audit_trail"] as Json[]).filter((event) => event["field"] === "promotion").map((event) => event["new_value"]);
    expect(moves.at(-1)).toBe("accepted");
  }, 60_000);

  it("shows a project's prompt and skill versions with coloured diffs", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Projects" }).click();
    await visible(page.getByRole("heading", { name: "Release bot" }));
    const promptDiff = page.getByRole("figure", { name: "Prompt of release-writer diff" });
    await visible(promptDiff);
    await visible(promptDiff.locator(".diff-del").filter({ hasText: "Keep them short." }));
    await visible(promptDiff.locator(".diff-add").filter({ hasText: "Keep them short and list breaking changes first." }));
    const skillDiff = page.getByRole("figure", { name: "Skill summarise_changelog diff" });
    await visible(skillDiff.locator(".diff-add").filter({ hasText: "List the breaking changes first." }));
    await shot(page, "projects");
  }, 60_000);

  it("shows readiness to a user, and the metric charts to an admin only", async () => {
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Health" }).click();
    await visible(page.getByRole("article", { name: "Readiness" }).getByText("ready"));
    await visible(page.getByText("Server-wide metrics are shown to admins only."));
    expect(await page.locator(".chart-canvas").count()).toBe(0);

    const adminContext = await newContext();
    try {
      const admin = await signIn(adminContext, "admin", server.adminKey);
      await admin.goto(`${consoleUrl}/#/health`);
      await visible(admin.getByRole("article", { name: "Readiness" }).getByText("ready"));
      await visible(admin.getByRole("article", { name: "Storage size" }).locator(".big-number"));
      // Three charts, each drawn on a canvas by uPlot once the first metrics sample is in.
      await visible(admin.locator(".chart-canvas canvas"), CHART_WAIT_MS);
      await expect.poll(() => admin.locator(".chart-canvas canvas").count()).toBe(3);
      // The embedded default calls no provider: the per-key cost table says so.
      await visible(admin.getByRole("article", { name: "Provider costs" }).getByText("No call to an LLM or embeddings endpoint since the server started."));
      await shot(admin, "health");
    } finally {
      await adminContext.close();
    }
  }, 90_000);

  it("signs out: the next navigation lands on sign-in and the old cookie no longer opens the API", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await visible(page.getByRole("form", { name: "Sign in" }));
    await page.goto(`${consoleUrl}/#/runs`);
    await visible(page.getByRole("form", { name: "Sign in" }));
    await expect.poll(() => inPage<string>(page, "location.hash")).toBe("#/sign-in");

    for (const route of ["/console/api/session", "/console/api/v2/control/runs", "/console/api/health"]) {
      const response = await fetch(`${consoleUrl}${route}`, { headers: { cookie: `engram_console=${cookie}` } });
      expect(response.status, route).toBe(401);
    }
    await context.close();
  }, 60_000);

  it("ran every page without a script error or a CSP violation", () => {
    expect(pageErrors).toEqual([]);
  });
});
