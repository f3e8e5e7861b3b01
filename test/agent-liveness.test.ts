// Agents going idle and gone are announced: liveness is derived from heartbeats, and the control event stream says
// when it changes (idle, gone, active again after a heartbeat) — to the agent's owner only, never for a deleted run.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { grpcStream, restCaller, type JsonObject } from "./harness/callers.js";
import { ok } from "./harness/memory.js";

let server: TestServer;

beforeAll(async () => {
  // Thresholds short enough that the test waits for events, not for minutes; ordering, not timing, is asserted.
  server = await startTestServer({ SERVICE_AGENT_IDLE_AFTER_MS: "40", SERVICE_AGENT_GONE_AFTER_MS: "120" });
});
afterAll(async () => server.close());

function watch(key: string, on = server): { events: JsonObject[]; until: (match: (e: JsonObject) => boolean) => Promise<JsonObject>; close: () => void } {
  const events: JsonObject[] = [];
  const wakers: (() => void)[] = [];
  const stream = grpcStream(on.port, "engram.v2.EventsService/Subscribe", { event_types: ["agent.*", "run.*"] }, key);
  stream.on("data", (event: JsonObject) => {
    events.push(event);
    for (const wake of wakers.splice(0)) wake();
  });
  stream.on("error", () => undefined);
  const until = async (match: (e: JsonObject) => boolean): Promise<JsonObject> => {
    for (;;) {
      const found = events.find(match);
      if (found !== undefined) return found;
      await new Promise<void>((resolve) => wakers.push(resolve));
    }
  };
  return { events, until, close: () => stream.cancel() };
}

const liveness = (e: JsonObject): { to: string; agent: string } => {
  const payload = JSON.parse(String(e["payload"])) as { to: string; agent_id: string };
  return { to: payload.to, agent: payload.agent_id };
};

it("announces idle, then gone, then active again after a heartbeat, only to the owner", async () => {
  const c = restCaller(server.baseUrl);
  const alice = await createUser(server.baseUrl, server.adminKey, "alice");
  const bob = await createUser(server.baseUrl, server.adminKey, "bob");
  const alices = watch(alice);
  const bobs = watch(bob);
  try {
    await alices.until((e) => e["type"] === "subscribed");
    await bobs.until((e) => e["type"] === "subscribed");
    await ok(c, "engram.v2.CoordinationService/RegisterAgent", { run_id: "live", agent_id: "worker" }, alice);
    const changes = (): { to: string; agent: string }[] => alices.events.filter((e) => e["type"] === "agent.liveness_changed").map(liveness);
    await alices.until((e) => e["type"] === "agent.liveness_changed" && liveness(e).to === "gone");
    expect(changes()).toEqual([
      { to: "idle", agent: "worker" },
      { to: "gone", agent: "worker" },
    ]);
    await ok(c, "engram.v2.CoordinationService/AgentHeartbeat", { run_id: "live", agent_id: "worker" }, alice);
    // Back to active, then idle again as the new heartbeat ages.
    await alices.until((e) => e["type"] === "agent.liveness_changed" && changes().filter((x) => x.to === "idle").length === 2);
    expect(changes().slice(2, 4)).toEqual([
      { to: "active", agent: "worker" },
      { to: "idle", agent: "worker" },
    ]);
    expect(bobs.events.filter((e) => e["type"] === "agent.liveness_changed")).toEqual([]);
  } finally {
    alices.close();
    bobs.close();
  }
});

it("never announces the agents of a deleted run", async () => {
  // A second server whose thresholds leave ample time to delete the run before its agent would go idle.
  const slow = await startTestServer({ SERVICE_AGENT_IDLE_AFTER_MS: "1000", SERVICE_AGENT_GONE_AFTER_MS: "1500" });
  try {
    const c = restCaller(slow.baseUrl);
    const alices = watch(slow.adminKey, slow);
    await alices.until((e) => e["type"] === "subscribed");
    await ok(c, "engram.v2.CoordinationService/RegisterAgent", { run_id: "kept", agent_id: "keeper" }, slow.adminKey);
    await ok(c, "engram.v2.CoordinationService/RegisterAgent", { run_id: "doomed", agent_id: "temp" }, slow.adminKey);
    await ok(c, "engram.v2.RunsService/DeleteRun", { run_id: "doomed" }, slow.adminKey);
    // The kept agent, registered first, goes gone after the deleted one would have gone idle and gone.
    await alices.until((e) => e["type"] === "agent.liveness_changed" && liveness(e).to === "gone");
    const announced = alices.events.filter((e) => e["type"] === "agent.liveness_changed").map(liveness);
    expect(announced.map((x) => x.agent)).toEqual(["keeper", "keeper"]);
    alices.close();
  } finally {
    await slow.close();
  }
});
