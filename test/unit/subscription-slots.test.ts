// Unit tests of the subscription caps: per key, server-wide, refusals take no slot, and a release is idempotent.
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { SubscriptionSlots } from "../../src/events/subscription-slots.js";

function refusal(fn: () => unknown): ConnectError {
  try {
    fn();
  } catch (e: unknown) {
    if (e instanceof ConnectError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}

describe("SubscriptionSlots", () => {
  it("caps each key, naming the limit, and leaves other keys alone", () => {
    const slots = new SubscriptionSlots("core event subscriptions", { perKey: 2, total: 10 });
    slots.acquire("a");
    slots.acquire("a");
    const e = refusal(() => slots.acquire("a"));
    expect(e.code).toBe(Code.ResourceExhausted);
    expect(e.rawMessage).toBe(
      "this API key already holds 2 open core event subscriptions, the limit per key (SERVICE_MAX_SUBSCRIPTIONS_PER_KEY=2); close one first",
    );
    slots.acquire("b");
    expect([slots.heldBy("a"), slots.heldBy("b"), slots.total]).toEqual([2, 1, 3]);
  });

  it("caps the server across keys", () => {
    const slots = new SubscriptionSlots("control event subscriptions", { perKey: 5, total: 3 });
    for (const key of ["a", "b", "c"]) slots.acquire(key);
    const e = refusal(() => slots.acquire("d"));
    expect(e.code).toBe(Code.ResourceExhausted);
    expect(e.rawMessage).toContain("SERVICE_MAX_SUBSCRIPTIONS=3");
    expect(slots.heldBy("d")).toBe(0);
  });

  it("frees one slot per release, however often it is called", () => {
    const slots = new SubscriptionSlots("core event subscriptions", { perKey: 1, total: 10 });
    const release = slots.acquire("a");
    release();
    release();
    expect([slots.heldBy("a"), slots.total]).toEqual([0, 0]);
    slots.acquire("a");
    expect(() => slots.acquire("a")).toThrow(ConnectError);
  });
});
