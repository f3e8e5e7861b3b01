// The nodes of a clustered test deployment: their settings, and calls to one of them (child processes), with Connect's JSON encoding as any HTTP
// client makes them, and the consistency tokens they answer with.
import path from "node:path";
import { expect } from "vitest";
import type { ChildServer } from "./child-server.js";
import { grpcStream, type JsonObject } from "./callers.js";

export const TOKEN_HEADER = "engram-consistency-token";

/**
 * What every node of a clustered test needs: its own data directory (`<root>/node<i>`) and id (`node<i>`), the shared
 * admin key, the NATS servers, quiet logs, a read wait long enough for a loaded machine, and `shards` tenant shards.
 * Each test adds its own settings.
 */
export function clusterNodeEnv(node: { readonly root: string; readonly index: number; readonly natsUrls: readonly string[]; readonly adminKey: string; readonly shards: number }): Record<string, string> {
  return {
    SERVICE_DATA_DIR: path.join(node.root, `node${node.index}`),
    SERVICE_ADMIN_KEY: node.adminKey,
    SERVICE_LOG_LEVEL: "warn",
    SERVICE_CLUSTER_NATS_URL: node.natsUrls.join(","),
    SERVICE_CLUSTER_NODE_ID: `node${node.index}`,
    SERVICE_CLUSTER_SHARD_COUNT: String(node.shards),
    SERVICE_CLUSTER_READ_WAIT_MS: "15000",
  };
}

export interface NodeAnswer {
  readonly status: number;
  readonly body: JsonObject;
  /** The call's consistency token; "" when it wrote nothing. */
  readonly token: string;
}

/** Calls `rpc` on `node`, carrying `token` when given. */
export async function callNode(node: ChildServer, rpc: string, request: object, key: string, token?: string): Promise<NodeAnswer> {
  const res = await fetch(`${node.baseUrl}/${rpc}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...(token === undefined || token === "" ? {} : { [TOKEN_HEADER]: token }) },
    body: JSON.stringify(request),
  });
  return { status: res.status, body: (await res.json()) as JsonObject, token: res.headers.get(TOKEN_HEADER) ?? "" };
}

/**
 * Calls and expects success. A node that cannot reach the log in time answers `unavailable` (503) and says to retry,
 * which a client does (three times); anything else fails the test, with the node's recent output.
 */
export async function succeedOn(node: ChildServer, rpc: string, request: object, key: string, token?: string): Promise<NodeAnswer> {
  let answer = await callNode(node, rpc, request, key, token);
  for (let retry = 0; answer.status === 503 && retry < 3; retry++) answer = await callNode(node, rpc, request, key, token);
  expect(answer.status, `${rpc} on ${node.baseUrl}: ${JSON.stringify(answer.body)}\n${answer.status === 200 ? "" : node.stdout().slice(-3000)}`).toBe(200);
  return answer;
}

/** The highest position per shard of several tokens: a read carrying it waits for all of them. */
export function mergeTokens(...tokens: readonly string[]): string {
  const merged = new Map<string, number>();
  for (const part of tokens.flatMap((token) => (token === "" ? [] : token.split(",")))) {
    const [shard, sequence] = part.split(":") as [string, string];
    merged.set(shard, Math.max(Number(sequence), merged.get(shard) ?? 0));
  }
  return [...merged].map(([shard, sequence]) => `${shard}:${sequence}`).join(",");
}

/** A server stream's messages, as they arrive over gRPC from `node`, waited on by content. */
export interface NodeListener {
  readonly events: JsonObject[];
  /** The first message matching, waited for at most `ms`. */
  until(match: (event: JsonObject) => boolean, ms?: number): Promise<JsonObject>;
  close(): void;
}

export function listenOn(node: ChildServer, rpc: string, request: JsonObject, key: string): NodeListener {
  const events: JsonObject[] = [];
  const wakers: (() => void)[] = [];
  const stream = grpcStream(Number(new URL(node.baseUrl).port), rpc, request, key);
  stream.on("data", (event: JsonObject) => {
    events.push(event);
    for (const wake of wakers.splice(0)) wake();
  });
  stream.on("error", () => undefined);
  const until = async (match: (event: JsonObject) => boolean, ms = 10_000): Promise<JsonObject> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = events.find(match);
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${ms} ms; seen: ${JSON.stringify(events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wakers.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  return { events, until, close: () => stream.cancel() };
}
