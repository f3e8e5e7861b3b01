// The control event stream as a gRPC server stream (@grpc/grpc-js): subscribed first, then matching events.
import { afterAll, beforeAll, expect, it } from "vitest";
import { collectStream, grpcStream } from "./harness/callers.js";
import { startTestServer, type TestServer } from "./harness/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

it("streams control events over gRPC, filtered by run and type", async () => {
  const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", { run_id: "g1", event_types: ["entry.*"] }, server.adminKey);
  const { received, next } = collectStream(stream);
  await next(1);
  expect(received[0]).toMatchObject({ type: "subscribed", run_id: "g1" });
  const remember = (session: string, content: string): Promise<Response> =>
    fetch(`${server.baseUrl}/v2/control/remember`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ session_id: session, content }),
    });
  await remember("elsewhere", "not for this stream");
  await remember("g1", "for this stream");
  await next(2);
  stream.cancel();
  expect(received[1]).toMatchObject({ type: "entry.created", run_id: "g1" });
  expect(JSON.parse(String(received[1]?.["payload"]))).toMatchObject({ entry_type: "fact" });
  expect(received).toHaveLength(2);
});
