// REST helpers for the core data-plane tests: one authenticated JSON call per route, plus typed accessors.
import { expect } from "vitest";
import type { JsonObject } from "./callers.js";

export interface RestResult {
  readonly status: number;
  readonly body: JsonObject;
}

/** Environment opening every core route, search included, with the fast offline embedder. */
export const CORE_ENV: Readonly<Record<string, string>> = {
  SERVICE_CORE_ALLOW_ALL: "true",
  SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
  SERVICE_EMBEDDER: "hashed",
};

/** The hashed embedder's dimension. */
export const DIMENSIONS = 384;

export class CoreRest {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  async call(method: string, path: string, body?: JsonObject, query?: Record<string, string>): Promise<RestResult> {
    const url = new URL(path, this.baseUrl);
    for (const [name, value] of Object.entries(query ?? {})) url.searchParams.set(name, value);
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as JsonObject };
  }

  post(path: string, body: JsonObject = {}): Promise<RestResult> {
    return this.call("POST", path, body);
  }

  get(path: string, query?: Record<string, string>): Promise<RestResult> {
    return this.call("GET", path, undefined, query);
  }

  delete(path: string, query?: Record<string, string>): Promise<RestResult> {
    return this.call("DELETE", path, undefined, query);
  }

  /** POST expecting 200; returns the body. */
  async ok(path: string, body: JsonObject = {}): Promise<JsonObject> {
    const r = await this.post(path, body);
    expect(r.status, `POST ${path}: ${JSON.stringify(r.body)}`).toBe(200);
    return r.body;
  }

  /** Inserts one node and returns its id. */
  async insert(node: JsonObject): Promise<string> {
    return String((await this.ok("/v2/core/insert", node))["node_id"]);
  }

  /** The node, or undefined on 404 (other statuses fail the test). */
  async node(id: string, sessionId?: string): Promise<JsonObject | undefined> {
    const r = await this.get(`/v2/core/node/${id}`, sessionId === undefined ? undefined : { session_id: sessionId });
    if (r.status === 404) return undefined;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body["node"] as JsonObject;
  }

  async search(request: JsonObject): Promise<JsonObject[]> {
    return (await this.ok("/v2/core/search", request))["results"] as JsonObject[];
  }

  async session(parent = ""): Promise<string> {
    return String((await this.ok("/v2/core/session/create", { parent_session_id: parent }))["session_id"]);
  }

  async entries(scratchpad: string, query: Record<string, string> = {}): Promise<JsonObject[]> {
    const r = await this.get(`/v2/core/memory/${scratchpad}`, query);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body["entries"] as JsonObject[];
  }
}

/** An HTTP error answer with this status and code whose message mentions `text`. */
export function expectError(r: RestResult, status: number, code: string, text?: string | RegExp): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body["code"]).toBe(code);
  if (text !== undefined) expect(String(r.body["message"])).toMatch(text);
}

/** INVALID_ARGUMENT whose message starts with `field:`. */
export function expectInvalidField(r: RestResult, field: string): void {
  expectError(r, 400, "invalid_argument");
  expect(String(r.body["message"]).startsWith(`${field}:`), String(r.body["message"])).toBe(true);
}

/** A unit basis vector of the embedder's dimension, optionally mixed with a second axis. */
export function axis(i: number, j?: number, weight = 0): number[] {
  const v = new Array<number>(DIMENSIONS).fill(0);
  v[i] = 1;
  if (j !== undefined) v[j] = weight;
  return v;
}

export function uniqueRun(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`;
}
