// What every step of the crash loop shares: the model, the sender, the seeded generator, the per-route counts, the
// violations found and the requests still awaiting a verdict (sent, never answered).
import type { JsonObject, TransportName } from "../harness/callers.js";
import type { Rng } from "../fuzz/prng.js";
import type { World } from "./model.js";
import type { Observation } from "./observe.js";
import type { Answer, Sender } from "./sender.js";

export interface RouteCounts {
  acked: number;
  unknown: number;
  refused: number;
}

/**
 * A request that got no answer. The check after the restart settles it: `before` retries it when it is idempotent
 * and must settle before anything is read (ingest), `resolve` decides from what the server holds whether it was
 * applied (all of it or none), and `after` retries an idempotent one whose effect the next check verifies.
 */
export interface Pending {
  readonly route: string;
  before?(ctx: Ctx): Promise<void>;
  resolve?(obs: Observation, ctx: Ctx): void;
  after?(ctx: Ctx): Promise<void>;
}

export interface Ctx {
  readonly world: World;
  readonly sender: Sender;
  readonly rng: Rng;
  /** The workload user's key; the admin key only compacts. */
  readonly key: string;
  readonly adminKey: string;
  readonly counts: Map<string, RouteCounts>;
  readonly pending: Pending[];
  readonly violations: string[];
  /** Kills so far, named in violations. */
  readonly kill: () => number;
  /** Asks the killer to fire now rather than at its drawn moment (to land a kill inside a chosen operation). */
  readonly killNow?: () => void;
}

export function violation(ctx: Ctx, text: string): void {
  ctx.violations.push(`after kill ${ctx.kill()}: ${text}`);
}

/** REST mostly, some Connect and gRPC. */
export function drawTransport(ctx: Ctx): TransportName {
  return ctx.rng.weighted([
    ["rest", 6],
    ["connect", 2],
    ["grpc", 2],
  ] as const);
}

/**
 * Sends one workload request and counts it under `route`. A refusal whose code is not in `allowed` is a violation
 * (the workload only sends valid requests); it is returned all the same, and means nothing was applied.
 */
export async function call(ctx: Ctx, route: string, rpc: string, request: JsonObject, options: { key?: string; allowed?: readonly string[]; transport?: TransportName } = {}): Promise<Answer> {
  const answer = await ctx.sender.send(options.transport ?? drawTransport(ctx), rpc, request, options.key ?? ctx.key);
  let counts = ctx.counts.get(route);
  if (counts === undefined) ctx.counts.set(route, (counts = { acked: 0, unknown: 0, refused: 0 }));
  counts[answer.kind]++;
  if (answer.kind === "refused" && !(options.allowed ?? []).includes(answer.code)) {
    violation(ctx, `${route} refused with ${answer.code}: ${answer.message} (request ${JSON.stringify(request).slice(0, 300)})`);
  }
  return answer;
}

/** A read of the check: it must succeed, the server being up; otherwise the loop stops with the error. */
export async function read(ctx: Ctx, rpc: string, request: JsonObject, key = ctx.key): Promise<JsonObject> {
  const answer = await ctx.sender.send("connect", rpc, request, key);
  if (answer.kind !== "acked") throw new Error(`${rpc} failed during a check: ${JSON.stringify(answer)}`);
  return answer.body;
}

/** A read that may answer NOT_FOUND (undefined). */
export async function readOptional(ctx: Ctx, rpc: string, request: JsonObject, key = ctx.key): Promise<JsonObject | undefined> {
  const answer = await ctx.sender.send("connect", rpc, request, key);
  if (answer.kind === "acked") return answer.body;
  if (answer.kind === "refused" && answer.code === "not_found") return undefined;
  throw new Error(`${rpc} failed during a check: ${JSON.stringify(answer)}`);
}
