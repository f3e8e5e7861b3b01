// The descriptor fuzzer, seeded and short (`make torture` runs it at length): requests for every RPC built from the
// generated descriptors — well-typed, mistyped, boundary, deep, huge, not UTF-8 — sent over REST, Connect and gRPC
// with valid, missing, malformed, revoked and other users' keys, against the built server in a child process.
// FUZZ_SEED and FUZZ_REQUESTS override the seed and the count.
import type { DescMethod } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { judge } from "./fuzz/oracle.js";
import { formatReport } from "./fuzz/report.js";
import { runFuzz, type FuzzReport } from "./fuzz/run.js";
import { TRANSPORTS, type FuzzRequest } from "./fuzz/requests.js";
import type { Outcome } from "./fuzz/senders.js";
import { ENGRAM_SERVICES } from "../src/client/services.js";

const SEED = Number(process.env["FUZZ_SEED"] ?? 20_260_613);
const REQUESTS = Number(process.env["FUZZ_REQUESTS"] ?? 3000);
/**
 * How far the floor of the server's anonymous memory may rise over the run before it counts as a leak. A short run
 * still sees the heap grow into its working size (about 90 MB here); a leak of a request's body each time would
 * add far more. `make torture` reports the same figure over 100,000 requests.
 */
const MEMORY_GROWTH_BOUND_KB = 320 * 1024;

let report: FuzzReport;
let summary: string;

beforeAll(async () => {
  // 15 s to answer: `make test` runs every test file at once on two cores; `make torture` holds the server to 10 s.
  report = await runFuzz({ seed: SEED, requests: REQUESTS, concurrency: 8, timeoutMs: 15_000, maxRequestBytes: 128 * 1024, embedder: "hashed" });
  summary = formatReport(report);
}, 300_000);

describe(`descriptor fuzzer, seed ${SEED}, ${REQUESTS} requests`, () => {
  it("no answer is a 5xx or a server-fault gRPC code beyond the documented ones, a hang, a dropped connection, a success without a valid key, or another user's data", () => {
    expect(report.failures, summary).toEqual([]);
  });

  it("every RPC was called over REST, Connect and gRPC", () => {
    const all = Object.values(ENGRAM_SERVICES).flatMap((s) => s.methods.map((m) => `${s.name}/${m.name}`));
    for (const transport of TRANSPORTS) expect([...report.called[transport]].sort(), transport).toEqual([...all].sort());
  });

  it("enough requests succeed that the fuzzer reaches past validation, on most RPCs", () => {
    expect(report.succeeded, summary).toBeGreaterThan(REQUESTS / 10);
    expect(Object.keys(report.succeededBy).length, summary).toBeGreaterThan(60);
  });

  it("the server stayed up and ready throughout, and logged no error", () => {
    expect(report.requests).toBe(REQUESTS);
    expect(report.logErrors, summary).toEqual([]);
  });

  it("the victim's data read the same before and after", () => {
    expect(report.victimChanged, summary).toEqual([]);
  });

  it("the floor of the server's memory did not keep rising", () => {
    expect(report.memoryGrowthKb, summary).toBeLessThan(MEMORY_GROWTH_BOUND_KB);
  });
});

describe("the fuzzer's oracle flags what it must", () => {
  const method = (service: keyof typeof ENGRAM_SERVICES, name: string): DescMethod => ENGRAM_SERVICES[service].methods.find((m) => m.name === name) as DescMethod;
  const request = (m: DescMethod, changes: Partial<FuzzRequest> = {}): FuzzRequest => ({
    index: 0, method: m, transport: "rest", keyKind: "fuzz", variation: "valid", overLimit: false, clientDeadline: false,
    wire: { kind: "http", verb: "POST", path: "/", headers: {}, body: Buffer.alloc(0), read: "whole" },
    ...changes,
  });
  const answer = (changes: Partial<Outcome>): Outcome => ({
    status: 200, grpcCode: undefined, connectCode: undefined, body: Buffer.from("{}"), contentType: "application/json", error: undefined, ms: 1, ...changes,
  });
  const secrets = { canary: "zqxcanary1", secrets: ["s3cr3t"] };
  const remember = method("memory", "Remember");
  const json = (o: object): Buffer => Buffer.from(JSON.stringify(o));

  it("a plain answer passes; 500, INTERNAL, a hang and a reset do not", () => {
    expect(judge(request(remember), answer({}), secrets)).toBeUndefined();
    expect(judge(request(remember), answer({ status: 500, body: json({ code: "internal", message: "x" }) }), secrets)).toBe("HTTP 500");
    expect(judge(request(remember, { transport: "grpc" }), answer({ status: undefined, grpcCode: 13 }), secrets)).toBe("gRPC INTERNAL");
    expect(judge(request(remember), answer({ error: "timeout", ms: 10_001 }), secrets)).toMatch(/^hang/);
    expect(judge(request(remember), answer({ status: undefined, error: "ECONNRESET: read ECONNRESET" }), secrets)).toMatch(/^connection failed/);
  });

  it("501 is documented for the removed SDM routes only, and DEADLINE_EXCEEDED only when the caller set a deadline", () => {
    expect(judge(request(method("core", "SdmWrite")), answer({ status: 501, body: json({ code: "unimplemented", message: "gone" }) }), secrets)).toBeUndefined();
    expect(judge(request(remember), answer({ status: 501, body: json({ code: "unimplemented", message: "x" }) }), secrets)).toBe("HTTP 501");
    expect(judge(request(remember, { transport: "grpc" }), answer({ status: undefined, grpcCode: 4 }), secrets)).toBe("gRPC DEADLINE_EXCEEDED");
    expect(judge(request(remember, { transport: "grpc", clientDeadline: true }), answer({ status: undefined, grpcCode: 4 }), secrets)).toBeUndefined();
  });

  it("a success with a missing, malformed or revoked key, the victim's canary or a key's secret in an answer", () => {
    expect(judge(request(remember, { keyKind: "revoked" }), answer({}), secrets)).toBe("succeeded with a revoked key");
    expect(judge(request(method("health", "Livez"), { keyKind: "none" }), answer({}), secrets)).toBeUndefined();
    expect(judge(request(remember), answer({ body: json({ content: "zqxcanary1" }) }), secrets)).toBe("answer holds the victim's data");
    expect(judge(request(remember), answer({ status: 400, body: json({ code: "invalid_argument", message: "key s3cr3t" }) }), secrets)).toBe("answer holds an API key secret");
    expect(judge(request(remember), answer({ status: 400, body: Buffer.from("oops") }), secrets)).toBe("error body is not JSON");
  });
});
