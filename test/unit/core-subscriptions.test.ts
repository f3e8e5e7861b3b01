// The subscription registry on its own: filters, read access, order, close, abort and the bounded queue.
import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Principal } from "../../src/auth/principal.js";
import { CoreEventBus, type CoreEvent } from "../../src/core/core-events.js";
import { MAX_PENDING_CORE_EVENTS, SubscriptionRegistry, type CoreSubscription, type Delivery, type ReadCheck } from "../../src/core/subscriptions.js";
import { normalize } from "../../src/retrieval/embedder.js";

const alice: Principal = { userId: 1, username: "alice", role: "user", keyId: "k1" };
const bob: Principal = { userId: 2, username: "bob", role: "user", keyId: "k2" };
const admin: Principal = { userId: 9, username: "root", role: "admin", keyId: "k9" };

/** Bob has granted alice read on his run "shared"; owners and admins read everything of theirs. */
const grants: ReadCheck = {
  allows: (caller, owner, runId) => caller.role === "admin" || caller.userId === owner || (caller.userId === 1 && owner === 2 && runId === "shared"),
};

const vec = (...xs: number[]): Float32Array => normalize(Float32Array.from(xs));
const node = (type: CoreEvent["type"], owner: number, nodeId: bigint, runId: string, vector = vec(1, 0, 0)): CoreEvent => ({
  type,
  owner,
  nodeId,
  runId,
  lane: "",
  metadataJson: "{}",
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  vector,
});
const memo = (owner: number, sessionId: string): CoreEvent => ({ type: "memory.added", owner, sessionId, entryJson: "{}" });

function setup(): { bus: CoreEventBus; registry: SubscriptionRegistry } {
  const bus = new CoreEventBus();
  return { bus, registry: new SubscriptionRegistry(bus, grants) };
}

/** Drains what is queued now: closes the subscription after `count` deliveries, or when nothing more is queued. */
async function take(subscription: CoreSubscription, count: number): Promise<Delivery[]> {
  const out: Delivery[] = [];
  const abort = new AbortController();
  const it = subscription.deliveries(abort.signal)[Symbol.asyncIterator]();
  while (out.length < count) {
    const next = await it.next();
    if (next.done === true) break;
    out.push(next.value);
  }
  abort.abort();
  return out;
}
const kinds = (ds: Delivery[]): string[] => ds.map((d) => `${d.event.type}:${String(d.event.nodeId ?? d.event.sessionId)}`);

describe("SubscriptionRegistry", () => {
  it("`all` gets the caller's events and granted runs, in publish order; scratchpads only their owner's", async () => {
    const { bus, registry } = setup();
    const sub = registry.open(alice, { kind: "all" }, "");
    bus.publish(node("node.inserted", 1, 1n, "r"));
    bus.publish(node("node.inserted", 2, 2n, "bobs"));
    bus.publish(node("node.inserted", 2, 3n, "shared"));
    bus.publish(memo(2, "pad"));
    bus.publish({ type: "node.deleted", owner: 2, nodeId: 2n }); // no run: owner only
    bus.publish(memo(1, "pad"));
    bus.publish(node("node.deleted", 1, 1n, "r"));
    expect(kinds(await take(sub, 4))).toEqual(["node.inserted:1", "node.inserted:3", "memory.added:pad", "node.deleted:1"]);
  });

  it("an admin sees every user's events", async () => {
    const { bus, registry } = setup();
    const sub = registry.open(admin, { kind: "all" }, "");
    bus.publish(node("node.inserted", 1, 1n, "r"));
    bus.publish(memo(2, "pad"));
    expect(kinds(await take(sub, 2))).toEqual(["node.inserted:1", "memory.added:pad"]);
  });

  it("`node`, `session` and `run_id` narrow the events", async () => {
    const { bus, registry } = setup();
    const byNode = registry.open(alice, { kind: "node", nodeId: 7n }, "");
    const bySession = registry.open(alice, { kind: "session", sessionId: "p1" }, "");
    const byRun = registry.open(alice, { kind: "all" }, "r2");
    bus.publish(node("node.inserted", 1, 6n, "r1"));
    bus.publish(node("node.updated", 1, 7n, "r2"));
    bus.publish(memo(1, "p2"));
    bus.publish(memo(1, "p1"));
    bus.publish(node("node.deleted", 1, 7n, "r2"));
    expect(kinds(await take(byNode, 2))).toEqual(["node.updated:7", "node.deleted:7"]);
    expect(kinds(await take(bySession, 1))).toEqual(["memory.added:p1"]);
    expect(kinds(await take(byRun, 2))).toEqual(["node.updated:7", "node.deleted:7"]);
  });

  it("`semantic` passes inserts and updates at or above the threshold, with their similarity", async () => {
    const { bus, registry } = setup();
    const sub = registry.open(alice, { kind: "semantic", vector: vec(1, 0, 0), threshold: 0.8 }, "");
    bus.publish(node("node.inserted", 1, 1n, "r", vec(0, 1, 0))); // 0
    bus.publish(node("node.inserted", 1, 2n, "r", vec(1, 1, 0))); // 0.707
    bus.publish(node("node.updated", 1, 3n, "r", vec(4, 3, 0))); // 0.8
    bus.publish(node("node.deleted", 1, 3n, "r", vec(1, 0, 0)));
    bus.publish(node("node.inserted", 1, 4n, "r", vec(1, 0, 0))); // 1
    const got = await take(sub, 2);
    expect(kinds(got)).toEqual(["node.updated:3", "node.inserted:4"]);
    expect(got[0]?.similarity).toBeCloseTo(0.8, 6);
    expect(got[1]?.similarity).toBeCloseTo(1, 6);
  });

  it("lists a user's ids oldest first with the server-wide total; close is by owner only and ends the stream", async () => {
    const { registry } = setup();
    const a1 = registry.open(alice, { kind: "all" }, "");
    const b1 = registry.open(bob, { kind: "all" }, "");
    const a2 = registry.open(alice, { kind: "all" }, "");
    expect(a1.id).not.toBe(a2.id);
    expect(registry.idsOf(1)).toEqual([a1.id, a2.id]);
    expect(registry.total).toBe(3);
    expect(registry.close(2, a1.id)).toBe(false);
    expect(registry.close(1, a1.id)).toBe(true);
    expect(registry.close(1, a1.id)).toBe(false);
    expect(await take(a1, 1)).toEqual([]);
    expect(registry.idsOf(1)).toEqual([a2.id]);
    expect(registry.idsOf(2)).toEqual([b1.id]);
    expect(registry.total).toBe(2);
  });

  it("a waiting stream ends when its signal aborts", async () => {
    const { registry } = setup();
    const sub = registry.open(alice, { kind: "all" }, "");
    const abort = new AbortController();
    const pending = sub.deliveries(abort.signal)[Symbol.asyncIterator]().next();
    abort.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
  });

  it("a subscriber that falls too far behind is removed at once and its stream ends with RESOURCE_EXHAUSTED", async () => {
    const { bus, registry } = setup();
    const slow = registry.open(alice, { kind: "all" }, "");
    const other = registry.open(alice, { kind: "node", nodeId: 1n }, "");
    for (let i = 0; i <= MAX_PENDING_CORE_EVENTS; i++) bus.publish(node("node.inserted", 1, BigInt(i + 1), "r"));
    expect(registry.idsOf(1)).toEqual([other.id]);
    const error = await take(slow, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((error as ConnectError).rawMessage).toContain(`fell more than ${MAX_PENDING_CORE_EVENTS} events behind`);
    expect(kinds(await take(other, 1))).toEqual(["node.inserted:1"]);
  });
});
