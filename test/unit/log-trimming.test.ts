import { expect, it } from "vitest";
import { snapshotName, takesSnapshot, trimPositions, type NodeProgress } from "../../src/cluster/log-trimming.js";

const progress = (entries: Record<string, NodeProgress>): Map<string, NodeProgress> => new Map(Object.entries(entries));

it("trims each shard to the oldest of its snapshots and of the nodes serving it", () => {
  const nodes = progress({
    a: { shards: [1, 2], applied: { "0": 40, "1": 30, "2": 25 } },
    b: { shards: [1, 2], applied: { "0": 35, "1": 28, "2": 26 } },
    c: { shards: [3], applied: { "0": 50, "3": 44 } },
  });
  const snapshots = new Map<string, Record<string, number>>([
    [snapshotName([1, 2]), { "0": 33, "1": 29, "2": 20 }],
    [snapshotName([3]), { "0": 45, "3": 41 }],
  ]);
  expect(Object.fromEntries(trimPositions({ progress: nodes, snapshots }))).toEqual({ 0: 33, 1: 28, 2: 20, 3: 41 });
});

it("keeps the whole log of a shard while any set holding it has no snapshot", () => {
  const nodes = progress({
    a: { shards: [1], applied: { "0": 10, "1": 10 } },
    b: { shards: [1, 2], applied: { "0": 10, "1": 10, "2": 10 } },
  });
  const snapshots = new Map([[snapshotName([1]), { "0": 9, "1": 9 }]]);
  // The set [1, 2] has no snapshot: a new node of it could only start from the log.
  expect(Object.fromEntries(trimPositions({ progress: nodes, snapshots }))).toEqual({});
});

it("gives each set's snapshot to the first node of the set by id", () => {
  const nodes = progress({ b: { shards: [2, 1], applied: {} }, c: { shards: [1, 2], applied: {} }, a: { shards: [3], applied: {} } });
  expect(takesSnapshot({ nodeId: "b", shards: [1, 2], progress: nodes })).toBe(true);
  expect(takesSnapshot({ nodeId: "c", shards: [1, 2], progress: nodes })).toBe(false);
  expect(takesSnapshot({ nodeId: "a", shards: [3], progress: nodes })).toBe(true);
  expect(snapshotName([2, 1])).toBe(snapshotName([1, 2]));
});
