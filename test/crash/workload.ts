// One client of the crash loop's mixed workload: draws a write route by weight (seeded) and runs it on the
// resources this client owns, one request at a time, until the killer fires or a request goes unanswered.
import type { Ctx } from "./context.js";
import type { ClientWorld, MemoryRun } from "./model.js";
import { batchInsertNodes, clearPad, compact, CORE_RUN_CAPACITY, coreSession, deleteCoreRun, deleteNode, insertNode, PAD_CAPACITY, writePad } from "./ops-core.js";
import { archive, batchInsert, deleteLesson, deleteRun, ingest, outcome, remember, RUN_CAPACITY, updateLesson } from "./ops-memory.js";
import { activatePrompt, activateSkill, setPrompt, updateSkill } from "./ops-resources.js";

type Step = (ctx: Ctx, client: ClientWorld, run: MemoryRun, slot: number) => Promise<boolean>;

const STEPS: readonly (readonly [Step, number])[] = [
  [(c, _w, run) => remember(c, run), 12],
  [(c, _w, run) => ingest(c, run), 7],
  [(c, _w, run) => batchInsert(c, run), 5],
  [(c, _w, run) => archive(c, run), 4],
  [(c, _w, run) => updateLesson(c, run), 4],
  [(c, _w, run) => deleteLesson(c, run), 2],
  [(c, _w, run) => outcome(c, run), 7],
  [(c, w, _run, slot) => deleteRun(c, w, slot), 1],
  [(c, w) => insertNode(c, w), 7],
  [(c, w) => batchInsertNodes(c, w), 3],
  [(c, w) => deleteNode(c, w), 3],
  [(c, w) => deleteCoreRun(c, w), 1],
  [(c, w) => coreSession(c, w), 4],
  [(c, w) => writePad(c, w), 5],
  [(c, w) => clearPad(c, w), 1],
  [(c, w) => setPrompt(c, w, false), 3],
  [(c, w) => activatePrompt(c, w, false), 2],
  [(c, w) => updateSkill(c, w, false), 3],
  [(c, w) => activateSkill(c, w, false), 2],
  // Shared by every client, concurrently.
  [(c) => outcome(c, c.world.sharedRun), 3],
  [(c, w) => setPrompt(c, w, true), 2],
  [(c, w) => activatePrompt(c, w, true), 2],
  [(c, w) => updateSkill(c, w, true), 2],
  [(c, w) => activateSkill(c, w, true), 2],
];

/** Client 0 also compacts, as the admin, now and then. */
const COMPACT: readonly [Step, number] = [(c) => compact(c), 3];

/** One step: a full resource is renewed first, so that what each check reads stays small. */
function step(ctx: Ctx, client: ClientWorld): Promise<boolean> {
  const slot = ctx.rng.int(client.memoryRuns.length);
  const run = client.memoryRuns[slot] as MemoryRun;
  if (run.entries.size >= RUN_CAPACITY) return deleteRun(ctx, client, slot);
  if (client.coreRun.nodes.size >= CORE_RUN_CAPACITY) return deleteCoreRun(ctx, client);
  if (client.pad.entries.size >= PAD_CAPACITY) return clearPad(ctx, client);
  const chosen = ctx.rng.weighted(client.index === 0 ? [...STEPS, COMPACT] : STEPS);
  return chosen(ctx, client, run, slot);
}

/** Runs steps until `stopped()` or until a request goes unanswered (the server was killed under it). */
export async function runClient(ctx: Ctx, client: ClientWorld, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    if (!(await step(ctx, client))) return;
  }
}
