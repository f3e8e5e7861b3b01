// Unit tests of the activity handlers over a real LMDB store: filters, projection, ordering, limits, page tokens,
// paging while entries are appended, export and append, called directly with a fake handler context.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import {
  AppendActivityRequestSchema,
  AppendActivityResponseSchema,
  ExportActivityRequestSchema,
  ExportActivityResponseSchema,
  ListActivityRequestSchema,
  ListActivityResponseSchema,
  MemoryService,
  type ListActivityResponse,
} from "../../gen/engram/v2/memory_service_pb.js";
import { principalKey, type Principal } from "../../src/auth/principal.js";
import { EventBus } from "../../src/events/event-bus.js";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { EntryStore, newEntry as defaultEntry, type EntryRecord, type NewEntry } from "../../src/storage/entry-store.js";
import { activityHandlers, firstCharacters, parseRfc3339, type ActivityHandlers } from "../../src/services/memory/activity.js";

const ADMIN: Principal = { userId: 1, username: "admin", role: "admin", keyId: "k1" };
const ALICE: Principal = { userId: 2, username: "alice", role: "user", keyId: "k2" };
const BOB: Principal = { userId: 3, username: "bob", role: "user", keyId: "k3" };

/** A fixed creation time far from "now", so time-window tests do not depend on the clock. */
const T0 = Date.UTC(2024, 4, 1, 12, 0, 0, 0);

let dir: string;
let storage: Storage;
let store: EntryStore;
let handlers: ActivityHandlers;
const events = new EventBus();

function newEntry(over: Partial<NewEntry> = {}): NewEntry {
  return defaultEntry({ owner: ALICE.userId, runId: "run-a", agentId: "agent-1", entryType: "fact", content: "something", occurrenceTime: 1_700_000_000, ...over });
}

const prepared = (entry: NewEntry) => ({ entry, vector: new Float32Array(4), termFreqs: new Map<string, number>() });

async function put(entries: NewEntry[], now?: number): Promise<EntryRecord[]> {
  if (now === undefined) return (await store.append(entries.map(prepared))).map((w) => w.record);
  const written = await storage.transaction(() => store.writeInTransaction(entries.map(prepared), now));
  return written.map((w) => w.record);
}

function ctxFor(principal: Principal, method: keyof typeof MemoryService.method): HandlerContext {
  return createHandlerContext({
    service: MemoryService,
    method: MemoryService.method[method],
    protocolName: "connect",
    requestMethod: "POST",
    url: `http://localhost/engram.v2.MemoryService/${method}`,
    contextValues: createContextValues().set(principalKey, principal),
  });
}

async function list(principal: Principal, req: MessageInitShape<typeof ListActivityRequestSchema>): Promise<ListActivityResponse> {
  const res = await handlers.listActivity(create(ListActivityRequestSchema, req), ctxFor(principal, "listActivity"));
  return create(ListActivityResponseSchema, res);
}

async function exportAll(principal: Principal, req: MessageInitShape<typeof ExportActivityRequestSchema>) {
  const res = await handlers.exportActivity(create(ExportActivityRequestSchema, req), ctxFor(principal, "exportActivity"));
  return create(ExportActivityResponseSchema, res);
}

async function append(principal: Principal, req: MessageInitShape<typeof AppendActivityRequestSchema>) {
  const res = await handlers.appendActivity(create(AppendActivityRequestSchema, req), ctxFor(principal, "appendActivity"));
  return create(AppendActivityResponseSchema, res);
}

async function expectInvalid(promise: Promise<unknown>, field: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected a 400 naming ${field}`).toBeInstanceOf(ConnectError);
  const connectError = error as ConnectError;
  expect(connectError.code).toBe(Code.InvalidArgument);
  expect(connectError.rawMessage.startsWith(`${field}:`), connectError.rawMessage).toBe(true);
}

/** Walks every page; `between` runs after each page, before the next request. */
async function pageAll(
  principal: Principal,
  req: MessageInitShape<typeof ListActivityRequestSchema>,
  between: () => Promise<void> = async () => {},
): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = "";
  for (let pages = 0; pages < 1000; pages += 1) {
    const res = await list(principal, { ...req, pageToken });
    ids.push(...res.entries.map((e) => e.id));
    if (res.nextPageToken === "") return ids;
    pageToken = res.nextPageToken;
    await between();
  }
  throw new Error("paging did not end");
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-activity-"));
  storage = openStorage(dir);
  store = new EntryStore(storage);
  handlers = activityHandlers({
    entries: store,
    write: async (entry) => {
      const [written] = await store.append([prepared(entry)]);
      if (written === undefined) throw new Error("append returned nothing");
      return written.record;
    },
    events,
  });
});

afterAll(async () => {
  await storage.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("parseRfc3339", () => {
  it("reads Z, offsets, lowercase separators and fractions, truncating below a millisecond", () => {
    expect(parseRfc3339("f", "2024-05-01T12:00:00Z")).toBe(T0);
    expect(parseRfc3339("f", "2024-05-01T14:00:00+02:00")).toBe(T0);
    expect(parseRfc3339("f", "2024-05-01t07:30:00-04:30")).toBe(T0);
    expect(parseRfc3339("f", "2024-05-01T12:00:00.5Z")).toBe(T0 + 500);
    expect(parseRfc3339("f", "2024-05-01T12:00:00.123999Z")).toBe(T0 + 123);
    expect(parseRfc3339("f", "2024-02-29T00:00:00Z")).toBe(Date.UTC(2024, 1, 29));
    expect(parseRfc3339("f", "0001-01-01T00:00:00Z")).toBe(new Date("0001-01-01T00:00:00Z").getTime());
  });

  it("rejects what is not an RFC 3339 date-time, naming the field", () => {
    for (const bad of ["", "yesterday", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
      "2024-04-31T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:60:00Z", "2024-05-01T12:00:00+24:00", "1714564800"]) {
      expect(() => parseRfc3339("created_after", bad), bad).toThrow(/^\[invalid_argument\] created_after:/);
    }
  });
});

describe("firstCharacters", () => {
  it("counts code points and never splits a surrogate pair", () => {
    expect(firstCharacters("abc", 200)).toBe("abc");
    expect(firstCharacters("😀".repeat(300), 200)).toBe("😀".repeat(200));
    const text = `${"a".repeat(199)}😀${"b".repeat(50)}`;
    expect(firstCharacters(text, 200)).toBe(`${"a".repeat(199)}😀`);
  });
});

describe("ListActivity", () => {
  it("clamps limit to [1, 500]; 0 and omitted resolve to 1", async () => {
    await put(Array.from({ length: 520 }, (_, i) => newEntry({ runId: "bulk", content: `bulk ${i}` })));
    const omitted = await list(ALICE, { runId: "bulk" });
    expect(omitted.entries).toHaveLength(1);
    expect(omitted.totalVisible).toBe(520);
    expect(omitted.nextPageToken).not.toBe("");
    expect((await list(ALICE, { runId: "bulk", limit: 0 })).entries).toHaveLength(1);
    expect((await list(ALICE, { runId: "bulk", limit: 7 })).entries).toHaveLength(7);
    const big = await list(ALICE, { runId: "bulk", limit: 1000 });
    expect(big.entries).toHaveLength(500);
    expect(big.nextPageToken).not.toBe("");
    const rest = await list(ALICE, { runId: "bulk", limit: 1000, pageToken: big.nextPageToken });
    expect(rest.entries).toHaveLength(20);
    expect(rest.nextPageToken).toBe("");
  });

  it("orders newest first by default and oldest first with sort asc", async () => {
    const written = await put([newEntry({ runId: "order", content: "one" }), newEntry({ runId: "order", content: "two" })]);
    await put([newEntry({ runId: "order", content: "three" })]);
    const desc = await list(ALICE, { runId: "order", limit: 10 });
    expect(desc.entries.map((e) => e.content)).toEqual(["three", "two", "one"]);
    expect((await list(ALICE, { runId: "order", limit: 10, sort: "desc" })).entries.map((e) => e.content)).toEqual(["three", "two", "one"]);
    const asc = await list(ALICE, { runId: "order", limit: 10, sort: "asc" });
    expect(asc.entries.map((e) => e.content)).toEqual(["one", "two", "three"]);
    expect(asc.entries[0]?.id).toBe(written[0]?.id);
    expect(asc.nextPageToken).toBe("");
    expect(asc.totalVisible).toBe(3);
  });

  it("maps every field of the entry", async () => {
    const [record] = await put([
      newEntry({
        runId: "fields",
        userId: "u-7",
        agentId: "agent-9",
        entryType: "archive_block",
        content: "block",
        importance: "high",
        metadataJson: '{"k":"v"}',
        lane: "lane-1",
        occurrenceTime: 1_600_000_000,
        upsertKey: "key-1",
        source: "human",
      }),
    ]);
    const [newer] = await put([newEntry({ runId: "fields", userId: "u-7", upsertKey: "key-1", content: "block v2" })]);
    const res = await list(ALICE, { runId: "fields", limit: 10, sort: "asc" });
    const first = res.entries[0];
    expect(first).toMatchObject({
      id: record?.id,
      runId: "fields",
      userId: "u-7",
      agentId: "agent-9",
      entryType: "archive_block",
      content: "block",
      source: "human",
      importance: "high",
      createdAt: new Date(record?.createdAt ?? 0).toISOString(),
      metadataJson: '{"k":"v"}',
      referenceId: record?.referenceId,
      referenceable: true,
      upsertKey: "key-1",
      originEntryType: "archive_block",
      lane: "lane-1",
      occurrenceTime: 1_600_000_000n,
      isStale: true,
      supersededBy: newer?.id,
      derived: false,
    });
    expect(first?.referenceId).toMatch(/^arc_/);
    expect(res.entries[1]).toMatchObject({ id: newer?.id, isStale: false, supersededBy: "", referenceable: false, referenceId: "" });
  });

  it("compact projection keeps 200 characters and empties metadata; full keeps both", async () => {
    const content = `${"a".repeat(199)}😀${"b".repeat(300)}`;
    await put([newEntry({ runId: "compact", content, metadataJson: '{"verbose":true}' })]);
    const compact = await list(ALICE, { runId: "compact", projection: "compact" });
    expect(compact.entries[0]?.content).toBe(`${"a".repeat(199)}😀`);
    expect([...(compact.entries[0]?.content ?? "")]).toHaveLength(200);
    expect(compact.entries[0]?.metadataJson).toBe("");
    for (const projection of ["", "full"]) {
      const full = await list(ALICE, { runId: "compact", projection });
      expect(full.entries[0]?.content).toBe(content);
      expect(full.entries[0]?.metadataJson).toBe('{"verbose":true}');
    }
  });

  it("created_after and created_before are inclusive, at millisecond precision, in any offset", async () => {
    await put([newEntry({ runId: "window", content: "early" })], T0 - 1);
    await put([newEntry({ runId: "window", content: "at" })], T0);
    await put([newEntry({ runId: "window", content: "later" })], T0 + 1);
    const contents = async (req: MessageInitShape<typeof ListActivityRequestSchema>) =>
      (await list(ALICE, { runId: "window", limit: 10, sort: "asc", ...req })).entries.map((e) => e.content);
    expect(await contents({ createdAfter: "2024-05-01T12:00:00Z", createdBefore: "2024-05-01T12:00:00.000Z" })).toEqual(["at"]);
    expect(await contents({ createdAfter: "2024-05-01T14:00:00+02:00" })).toEqual(["at", "later"]);
    expect(await contents({ createdBefore: "2024-05-01T12:00:00.000999Z" })).toEqual(["early", "at"]);
    expect(await contents({ createdAfter: "2024-05-01T12:00:00.001Z" })).toEqual(["later"]);
    expect(await contents({ createdAfter: "2024-05-01T12:00:01Z", createdBefore: "2024-05-01T11:00:00Z" })).toEqual([]);
    expect((await list(ALICE, { runId: "window", createdAfter: "2024-05-01T12:00:00Z" })).totalVisible).toBe(2);
  });

  it("filters by entry_types, user_id and agent_id, and exclude_derived drops derived entries", async () => {
    await put([
      newEntry({ runId: "filters", entryType: "fact", userId: "u1", agentId: "a1", content: "fact u1 a1" }),
      newEntry({ runId: "filters", entryType: "lesson", userId: "u1", agentId: "a2", content: "lesson u1 a2" }),
      newEntry({ runId: "filters", entryType: "rule", userId: "u2", agentId: "a1", content: "rule u2 a1", derived: true }),
      newEntry({ runId: "filters", entryType: "trace", userId: "u2", agentId: "a2", content: "trace u2 a2" }),
    ]);
    const contents = async (req: MessageInitShape<typeof ListActivityRequestSchema>) => {
      const res = await list(ALICE, { runId: "filters", limit: 10, sort: "asc", ...req });
      expect(res.totalVisible).toBe(res.entries.length);
      return res.entries.map((e) => e.content);
    };
    expect(await contents({ entryTypes: ["lesson", "rule"] })).toEqual(["lesson u1 a2", "rule u2 a1"]);
    expect(await contents({ userId: "u2" })).toEqual(["rule u2 a1", "trace u2 a2"]);
    expect(await contents({ agentId: "a1" })).toEqual(["fact u1 a1", "rule u2 a1"]);
    expect(await contents({ userId: "u1", agentId: "a2" })).toEqual(["lesson u1 a2"]);
    expect(await contents({ excludeDerived: true })).toEqual(["fact u1 a1", "lesson u1 a2", "trace u2 a2"]);
    expect(await contents({ excludeDerived: true, entryTypes: ["rule"] })).toEqual([]);
    expect(await contents({})).toHaveLength(4);
  });

  it("shows users only their own entries, admins everyone's; an empty run_id spans runs", async () => {
    await put([newEntry({ owner: ALICE.userId, runId: "shared-run", content: "alice's" })]);
    await put([newEntry({ owner: BOB.userId, runId: "shared-run", content: "bob's" })]);
    await put([newEntry({ owner: BOB.userId, runId: "bob-run", content: "bob's other" })]);
    const contents = async (who: Principal, runId: string) =>
      (await pageAll(who, { runId, limit: 500, sort: "asc" })).map((id) => store.find(id, () => true)?.content);
    expect(await contents(ALICE, "shared-run")).toEqual(["alice's"]);
    expect(await contents(BOB, "shared-run")).toEqual(["bob's"]);
    expect(await contents(ADMIN, "shared-run")).toEqual(["alice's", "bob's"]);
    expect(await contents(BOB, "")).toEqual(["bob's", "bob's other"]);
    const aliceAll = await list(ALICE, { limit: 500 });
    expect(aliceAll.entries.every((e) => store.find(e.id, () => true)?.owner === ALICE.userId)).toBe(true);
    expect(new Set(aliceAll.entries.map((e) => e.runId)).size).toBeGreaterThan(1);
    const adminAll = await list(ADMIN, { limit: 1 });
    expect(adminAll.totalVisible).toBe(aliceAll.totalVisible + 2);
  });

  for (const sort of ["asc", "desc"] as const) {
    it(`pages over every entry exactly once while entries are appended between pages (${sort})`, async () => {
      const runId = `paging-${sort}`;
      const original = await put(Array.from({ length: 23 }, (_, i) => newEntry({ runId, content: `original ${i}`, agentId: "pager" })));
      // Entries of other runs, owners and agents land between the pages too, and must not disturb the cursor.
      let added = 0;
      const appended: string[] = [];
      const ids = await pageAll(ALICE, { runId, sort, limit: 4, agentId: "pager" }, async () => {
        added += 1;
        const [mine] = await put([newEntry({ runId, content: `appended ${added}`, agentId: "pager" })]);
        if (mine !== undefined) appended.push(mine.id);
        await put([newEntry({ runId, content: "other agent", agentId: "other" }), newEntry({ owner: BOB.userId, runId, agentId: "pager" })]);
      });
      expect(new Set(ids).size).toBe(ids.length);
      const seen = new Set(ids);
      for (const record of original) expect(seen.has(record.id), record.id).toBe(true);
      const unexpected = ids.filter((id) => !original.some((r) => r.id === id));
      // Newest-first never reaches entries newer than its first page; oldest-first may run into them at its end.
      if (sort === "desc") expect(unexpected).toEqual([]);
      else expect(unexpected.every((id) => appended.includes(id))).toBe(true);
      const seqs = ids.map((id) => store.find(id, () => true)?.seq ?? -1);
      expect(seqs).toEqual([...seqs].sort((a, b) => (sort === "asc" ? a - b : b - a)));
    });
  }

  it("rejects bad filters naming the field", async () => {
    await expectInvalid(list(ALICE, { sort: "newest" }), "sort");
    await expectInvalid(list(ALICE, { sort: "ASC" }), "sort");
    await expectInvalid(list(ALICE, { projection: "tiny" }), "projection");
    await expectInvalid(list(ALICE, { entryTypes: ["fact", "bogus"] }), "entry_types");
    await expectInvalid(list(ALICE, { entryTypes: [""] }), "entry_types");
    await expectInvalid(list(ALICE, { createdAfter: "yesterday" }), "created_after");
    await expectInvalid(list(ALICE, { createdBefore: "2024-02-30T00:00:00Z" }), "created_before");
    await expectInvalid(list(ALICE, { runId: "r".repeat(257) }), "run_id");
  });

  it("rejects page tokens that are malformed or were issued for other filters or another sort", async () => {
    const first = await list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1" });
    const token = first.nextPageToken;
    expect(token).not.toBe("");
    expect((await list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", pageToken: token })).entries).toHaveLength(2);
    // The page size and projection may change between pages.
    expect((await list(ALICE, { runId: "bulk", limit: 5, agentId: "agent-1", projection: "compact", pageToken: token })).entries).toHaveLength(5);
    const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
    const decoded = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<string, unknown>;
    for (const bad of ["!!!", "not base64 at all", b64("plain text"), b64([1, 2]), b64({ ...decoded, seq: "1" }), b64({ ...decoded, seq: -1 }),
      b64({ ...decoded, seq: 1.5 }), b64({ seq: 1 }), "x".repeat(600), `${token}=`]) {
      await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", pageToken: bad }), "page_token");
    }
    await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", sort: "asc", pageToken: token }), "page_token");
    await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-2", pageToken: token }), "page_token");
    await expectInvalid(list(ALICE, { runId: "other", limit: 2, agentId: "agent-1", pageToken: token }), "page_token");
    await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", entryTypes: ["fact"], pageToken: token }), "page_token");
    await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", excludeDerived: true, pageToken: token }), "page_token");
    await expectInvalid(list(ALICE, { runId: "bulk", limit: 2, agentId: "agent-1", createdAfter: "2000-01-01T00:00:00Z", pageToken: token }), "page_token");
    // A token is bound to the caller's view: another user cannot continue it.
    await expectInvalid(list(BOB, { runId: "bulk", limit: 2, agentId: "agent-1", pageToken: token }), "page_token");
  });
});

describe("ExportActivity", () => {
  it("writes one JSON line per matching entry with proto field names; entry_count equals the lines", async () => {
    await put([
      newEntry({ runId: "export", content: "first\nwith a newline", metadataJson: '{"a":1}' }),
      newEntry({ runId: "export", content: "second", entryType: "lesson" }),
      newEntry({ runId: "export", content: "third", derived: true }),
    ]);
    const res = await exportAll(ALICE, { runId: "export" });
    expect(res.format).toBe("jsonl");
    expect(res.content.endsWith("\n")).toBe(true);
    const lines = res.content.split("\n").slice(0, -1);
    expect(lines).toHaveLength(res.entryCount);
    expect(res.entryCount).toBe(3);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.map((e) => e["content"])).toEqual(["third", "second", "first\nwith a newline"]);
    expect(parsed[2]).toMatchObject({ run_id: "export", entry_type: "fact", metadata_json: '{"a":1}', occurrence_time: "1700000000", is_stale: false, derived: false });
    expect(Object.keys(parsed[0] ?? {}).sort()).toEqual(
      ["id", "run_id", "user_id", "agent_id", "entry_type", "content", "source", "importance", "created_at", "metadata_json", "reference_id",
        "referenceable", "upsert_key", "origin_entry_type", "lane", "occurrence_time", "is_stale", "superseded_by", "derived", "source_entry_ids", "lineage_review",
        "provenance", "expires_at", "supersedes", "absorbed_ids"].sort(),
    );
    const asc = await exportAll(ALICE, { runId: "export", sort: "asc", entryTypes: ["fact"] });
    expect(asc.entryCount).toBe(2);
    expect(asc.content.split("\n").filter((l) => l !== "")).toHaveLength(2);
    const none = await exportAll(ALICE, { runId: "nothing-here" });
    expect(none).toMatchObject({ format: "jsonl", content: "", entryCount: 0 });
    expect((await exportAll(BOB, { runId: "export" })).entryCount).toBe(0);
    expect((await exportAll(ADMIN, { runId: "export" })).entryCount).toBe(3);
  });

  it("rejects bad filters naming the field", async () => {
    await expectInvalid(exportAll(ALICE, { sort: "sideways" }), "sort");
    await expectInvalid(exportAll(ALICE, { entryTypes: ["nope"] }), "entry_types");
    await expectInvalid(exportAll(ALICE, { createdAfter: "2024-05-01" }), "created_after");
    await expectInvalid(exportAll(ALICE, { createdBefore: "soon" }), "created_before");
  });
});

describe("AppendActivity", () => {
  it("stores a trace whose content is the payload and lists it with its event_id", async () => {
    const res = await append(ALICE, {
      runId: "act-run",
      agentId: "req-agent",
      activity: { type: "tool_call", payload: '{"q":"weather"}', toolName: "search", inputRef: "in://1", outputRef: "out://1", ts: "2024-05-01T14:00:00+02:00" },
    });
    expect(res.success).toBe(true);
    expect(res.eventId).toMatch(/^ent_/);
    const listed = await list(ALICE, { runId: "act-run", entryTypes: ["trace"] });
    expect(listed.totalVisible).toBe(1);
    const entry = listed.entries[0];
    expect(entry).toMatchObject({
      id: res.eventId,
      entryType: "trace",
      originEntryType: "trace",
      runId: "act-run",
      agentId: "req-agent",
      content: '{"q":"weather"}',
      source: "agent",
      importance: "medium",
      occurrenceTime: BigInt(T0 / 1000),
      derived: false,
    });
    expect(JSON.parse(entry?.metadataJson ?? "")).toEqual({
      activity_type: "tool_call",
      tool_name: "search",
      input_ref: "in://1",
      output_ref: "out://1",
      ts: "2024-05-01T14:00:00+02:00",
    });
    expect(store.find(res.eventId, () => true)?.owner).toBe(ALICE.userId);
    expect((await list(BOB, { runId: "act-run" })).totalVisible).toBe(0);
  });

  it("publishes activity.appended to the owner's subscribers", async () => {
    const subscription = events.open({ owner: ALICE.userId, runId: "act-events", types: ["activity.appended"] });
    const abort = new AbortController();
    try {
      const res = await append(ALICE, { runId: "act-events", agentId: "ag", activity: { type: "decision", payload: "go", toolName: "none" } });
      const next = await subscription.events(abort.signal).next();
      expect(next.value).toMatchObject({ type: "activity.appended", owner: ALICE.userId, runId: "act-events", agentId: "ag" });
      expect(JSON.parse(next.value?.payload ?? "{}")).toEqual({ event_id: res.eventId, type: "decision", tool_name: "none" });
    } finally {
      abort.abort();
      subscription.close();
    }
  });

  it("takes the record's agent_id over the request's and defaults ts to now", async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await append(BOB, { runId: "act-run-2", agentId: "req-agent", activity: { type: "message", payload: "hello", agentId: "rec-agent" } });
    const after = Math.floor(Date.now() / 1000);
    const record = store.find(res.eventId, () => true);
    expect(record?.agentId).toBe("rec-agent");
    expect(record?.occurrenceTime).toBeGreaterThanOrEqual(before);
    expect(record?.occurrenceTime).toBeLessThanOrEqual(after);
    const metadata = JSON.parse(record?.metadataJson ?? "") as Record<string, unknown>;
    expect(metadata).toMatchObject({ activity_type: "message", tool_name: "", input_ref: "", output_ref: "" });
    expect(Math.floor(parseRfc3339("ts", String(metadata["ts"])) / 1000)).toBe(record?.occurrenceTime);
  });

  it("rejects missing or invalid fields naming them", async () => {
    const activity = { type: "tool_call", payload: "x" };
    await expectInvalid(append(ALICE, { runId: "", activity }), "run_id");
    await expectInvalid(append(ALICE, { runId: "   ", activity }), "run_id");
    await expectInvalid(append(ALICE, { runId: "r" }), "activity");
    await expectInvalid(append(ALICE, { runId: "r", activity: { payload: "x" } }), "activity.type");
    await expectInvalid(append(ALICE, { runId: "r", activity: { type: "tool_call" } }), "activity.payload");
    await expectInvalid(append(ALICE, { runId: "r", activity: { ...activity, ts: "last tuesday" } }), "activity.ts");
    await expectInvalid(append(ALICE, { runId: "r", activity: { ...activity, ts: "2024-05-01 12:00" } }), "activity.ts");
    await expectInvalid(append(ALICE, { runId: "r", activity: { ...activity, payload: "x".repeat(1024 * 1024 + 1) } }), "activity.payload");
    await expectInvalid(append(ALICE, { runId: "r".repeat(257), activity }), "run_id");
    expect((await list(ALICE, { runId: "r" })).totalVisible).toBe(0);
  });
});
