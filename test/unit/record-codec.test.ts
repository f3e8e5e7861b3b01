// Unit tests of the record decoder: fields are checked and copied, misfits name the record kind, key and field, and
// another schema version fails with the upgrade message, both on read and in the start-up version scan.
import { describe, expect, it } from "vitest";
import { checkVersions, decodeOptional, formatKey, openRecord, RecordDecodeError, RecordVersionError } from "../../src/storage/record-codec.js";

const COLOURS = ["red", "green"] as const;

const good = {
  v: 1,
  name: "n",
  count: 3,
  ratio: 0.5,
  flag: false,
  colour: "red",
  tags: ["a", "b"],
  scores: [1, 2.5],
  meta: { k: "v" },
  bytes: Buffer.from([1, 2, 3]),
  inner: { text: "t" },
  nested: { v: 2, id: 7 },
  items: [{ n: 1 }, { n: 2 }],
};

function errorOf(fn: () => unknown): RecordDecodeError {
  try {
    fn();
  } catch (e: unknown) {
    if (e instanceof RecordDecodeError) return e;
    throw e;
  }
  throw new Error("expected a RecordDecodeError");
}

describe("openRecord", () => {
  it("reads every kind of field", () => {
    const r = openRecord("things", 1, good, 1);
    expect(r.version).toBe(1);
    expect(r.string("name")).toBe("n");
    expect(r.integer("count")).toBe(3);
    expect(r.number("ratio")).toBe(0.5);
    expect(r.boolean("flag")).toBe(false);
    expect(r.oneOf("colour", COLOURS)).toBe("red");
    expect(r.strings("tags")).toEqual(["a", "b"]);
    expect(r.numbers("scores")).toEqual([1, 2.5]);
    expect(r.stringMap("meta")).toEqual({ k: "v" });
    expect([...r.bytes("bytes")]).toEqual([1, 2, 3]);
    expect(r.object("inner").string("text")).toBe("t");
    expect(r.record("nested", [1, 2]).version).toBe(2);
    expect(r.objects("items").map((item) => item.number("n"))).toEqual([1, 2]);
    expect(r.optionalString("absent")).toBeUndefined();
    expect(r.optionalString("name")).toBe("n");
    expect(r.has("name")).toBe(true);
    expect(r.has("absent")).toBe(false);
  });

  it("copies arrays and maps, so a decoded record never aliases LMDB's cached value", () => {
    const r = openRecord("things", 1, good, 1);
    expect(r.strings("tags")).not.toBe(good.tags);
    expect(r.stringMap("meta")).not.toBe(good.meta);
  });

  it("names the kind, key and field of a misfit", () => {
    const e = errorOf(() => openRecord("things", [3, "run", 5], { ...good, count: "3" }, 1).number("count"));
    expect(e).not.toBeInstanceOf(RecordVersionError);
    expect(e.kind).toBe("things");
    expect(e.key).toBe('[3,"run",5]');
    expect(e.field).toBe("count");
    expect(e.message).toBe('things record [3,"run",5]: field count must be a finite number, got string "3"');
  });

  it("refuses missing fields, wrong element types, values outside an enumeration and non-integers", () => {
    const r = openRecord("things", "k", { ...good, tags: ["a", 1], colour: "blue", count: 1.5 }, 1);
    expect(errorOf(() => r.string("missing")).message).toBe("things record k: field missing must be a string, got nothing (missing)");
    expect(errorOf(() => r.strings("tags")).field).toBe("tags");
    expect(errorOf(() => r.oneOf("colour", COLOURS)).message).toContain("must be one of red, green");
    expect(errorOf(() => r.integer("count")).field).toBe("count");
    expect(errorOf(() => r.number("name")).field).toBe("name");
    expect(errorOf(() => r.bytes("tags")).field).toBe("tags");
    expect(errorOf(() => r.optionalString("count")).field).toBe("count");
  });

  it("names the path of a field in nested objects and arrays", () => {
    const r = openRecord("core_sessions", "cs_1", { v: 1, ops: [{ kind: "put" }, { kind: 3 }], inner: { record: { v: 1, x: 1 } } }, 1);
    const ops = r.objects("ops");
    expect(errorOf(() => ops[1]?.string("kind")).field).toBe("ops[1].kind");
    expect(errorOf(() => r.object("inner").record("record", 1).string("x")).field).toBe("inner.record.x");
    expect(errorOf(() => r.object("missing")).message).toBe("core_sessions record cs_1: field missing must be an object, got nothing (missing)");
  });

  it("refuses a value that is not an object", () => {
    for (const value of [null, "text", 3, [1], Buffer.from("x")]) {
      const e = errorOf(() => openRecord("users", "alice", value, 1));
      expect(e.field).toBe("");
      expect(e.message).toMatch(/^users record alice must be an object, got /);
    }
  });

  it("refuses another schema version with the upgrade message", () => {
    const e = errorOf(() => openRecord("core_nodes", 42, { ...good, v: 7 }, 1));
    expect(e).toBeInstanceOf(RecordVersionError);
    expect(e.field).toBe("v");
    expect(e.message).toBe("core_nodes record 42 has schema version 7; this build reads 1 — upgrade Engram or restore a matching backup");
    expect((e as RecordVersionError).found).toBe(7);
    expect(errorOf(() => openRecord("entries", 1, { v: 9 }, [1, 2])).message).toContain("this build reads 1 and 2 —");
    expect(errorOf(() => openRecord("entries", 1, { name: "no version" }, 1)).message).toContain("has schema version none;");
  });

  it("refuses another version of a nested record, naming where it sits", () => {
    const e = errorOf(() => openRecord("core_sessions", "cs_1", { v: 1, op: { record: { v: 3 } } }, 1).object("op").record("record", 1));
    expect(e).toBeInstanceOf(RecordVersionError);
    expect(e.field).toBe("op.record.v");
    expect(e.message).toBe("core_sessions record cs_1 (at op.record) has schema version 3; this build reads 1 — upgrade Engram or restore a matching backup");
  });
});

describe("decodeOptional", () => {
  it("passes undefined through and decodes anything else", () => {
    const decode = (value: unknown): string => openRecord("things", "k", value, 1).string("name");
    expect(decodeOptional(undefined, decode)).toBeUndefined();
    expect(decodeOptional(good, decode)).toBe("n");
    expect(() => decodeOptional(null, decode)).toThrow(RecordDecodeError);
  });
});

describe("checkVersions", () => {
  const db = (values: [unknown, unknown][]): { getRange(): Iterable<{ key: unknown; value: unknown }> } => ({
    getRange: () => values.map(([key, value]) => ({ key, value })),
  });

  it("counts records of readable versions", () => {
    expect(checkVersions("things", db([[1, { v: 1 }], [2, { v: 2 }]]), [1, 2])).toBe(2);
    expect(checkVersions("things", db([]), 1)).toBe(0);
  });

  it("stops at the first record of another version", () => {
    expect(() => checkVersions("core_nodes", db([[1, { v: 1 }], [42, { v: 7 }]]), 1)).toThrow(
      "core_nodes record 42 has schema version 7; this build reads 1 — upgrade Engram or restore a matching backup",
    );
    expect(() => checkVersions("users", db([["bob", "not a record"]]), 1)).toThrow("users record bob must be an object, got string");
  });
});

describe("formatKey", () => {
  it("writes strings and numbers as they are and tuples as JSON", () => {
    expect(formatKey("alice")).toBe("alice");
    expect(formatKey(42)).toBe("42");
    expect(formatKey([1, "run", "user", "bob", ""])).toBe('[1,"run","user","bob",""]');
  });
});
