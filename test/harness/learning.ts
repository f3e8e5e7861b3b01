// Reading lessons back as a caller would: ListLessons, and the promotion moves of a lesson's audit trail.
import { expect } from "vitest";
import type { Caller, JsonObject } from "./callers.js";
import { ok } from "./memory.js";

const LIST_LESSONS = "engram.v2.LearningService/ListLessons";

/** The stored lesson as ListLessons shows it (all the caller's runs), or undefined when it is not listed. */
export async function lessonOf(c: Caller, key: string, lessonId: string): Promise<JsonObject | undefined> {
  const body = await ok(c, LIST_LESSONS, { limit: 500 }, key);
  return (body["lessons"] as JsonObject[]).find((l) => l["id"] === lessonId);
}

/** The stored lesson as ListLessons shows it; the test fails when it is not listed. */
export async function lesson(c: Caller, key: string, lessonId: string): Promise<JsonObject> {
  const found = await lessonOf(c, key, lessonId);
  expect(found, `lesson ${lessonId} is listed`).toBeDefined();
  return found as JsonObject;
}

/** A lesson's promotion moves, oldest first, as `from→to`. */
export function promotionMoves(entry: JsonObject): string[] {
  return (entry["audit_trail"] as JsonObject[]).filter((e) => e["field"] === "promotion").map((e) => `${String(e["old_value"])}→${String(e["new_value"])}`);
}
