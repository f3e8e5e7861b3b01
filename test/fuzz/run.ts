// Runs a seeded fuzz campaign against a child server: builds each request from the descriptors, sends it with a
// bounded number in flight, judges every answer, watches readiness and memory, and finally checks that the victim's
// data and the server's log are as they should be.
import fs from "node:fs";
import http from "node:http";
import { fromBinary, toJson, type DescMethod } from "@bufbuild/protobuf";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { ENGRAM_SERVICES } from "../../src/client/services.js";
import { describeOutcome, describeRequest, statusKey } from "./describe.js";
import { IdPool } from "./id-pool.js";
import { secretsOf, type KeyKind } from "./keys.js";
import { judge, type Secrets } from "./oracle.js";
import { Rng } from "./prng.js";
import { buildRequest, type FuzzRequest, type Transport, type Variation } from "./requests.js";
import { GrpcSender, H2Sender, sendHttp, type Outcome } from "./senders.js";
import { protoVocabulary } from "./vocabulary.js";
import { createUsers, readVictim, rpc, seedOwner, startFuzzServer, type FuzzServer } from "./world.js";

export interface FuzzOptions {
  readonly seed: number;
  readonly requests: number;
  readonly concurrency: number;
  /** A call without an answer after this long is a hang. */
  readonly timeoutMs: number;
  readonly maxRequestBytes: number;
  readonly embedder: "hashed" | "wordvec";
  /** Called after every `progressEvery` requests. */
  readonly onProgress?: (done: number, report: FuzzReport) => void;
  readonly progressEvery?: number;
  /** Sees every request and answer (FUZZ_TRACE in the torture script prints some). */
  readonly onAnswer?: (rpc: string, request: string, answer: string) => void;
}

export interface Failure {
  readonly seed: number;
  readonly index: number;
  readonly rpc: string;
  readonly transport: Transport;
  readonly keyKind: KeyKind;
  readonly variation: Variation;
  readonly problem: string;
  /** The request as sent: verb and path or RPC path, headers, body (text or base64, cut). */
  readonly request: string;
  readonly answer: string;
}

export interface MemorySample {
  readonly rssKb: number;
  /** Anonymous memory only: LMDB's memory-mapped file pages count in RSS but are not the process's heap. */
  readonly anonKb: number;
}

export interface FuzzReport {
  readonly seed: number;
  requests: number;
  readonly byTransport: Record<Transport, number>;
  /** "rest 200", "connect 400", "grpc INVALID_ARGUMENT", "grpc-h2 200/3", "rest error" … */
  readonly statuses: Record<string, number>;
  succeeded: number;
  readonly failures: Failure[];
  failureCount: number;
  /** Successful answers per RPC ("MemoryService/Remember"), over every transport. */
  readonly succeededBy: Record<string, number>;
  /** Every RPC called, per transport. */
  readonly called: Record<Transport, Set<string>>;
  durationMs: number;
  slowestMs: number;
  slowest: string;
  memoryAfterWarmup: MemorySample | undefined;
  memoryAfterRun: MemorySample | undefined;
  /** Anonymous memory (kB) every `sampleEvery` requests, to tell a plateau from a leak. */
  readonly memorySeries: number[];
  /** Growth of the memory series' lower envelope: its minimum over the last quarter minus that over the second. */
  memoryGrowthKb: number;
  /** Size of the /metrics text after the run: its series must stay bounded whatever was sent. */
  metricsBytes: number;
  /** Routes whose answer to the victim changed during the run. */
  victimChanged: string[];
  /** Server log lines at level error or above. */
  readonly logErrors: string[];
}

const KEPT_FAILURES = 100;

function memoryOf(pid: number | undefined): MemorySample | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
    return { rssKb: field("VmRSS"), anonKb: field("RssAnon") };
  } catch {
    return undefined;
  }
}

/** Ids from a successful answer, so later requests name real records. */
function harvest(pool: IdPool, request: FuzzRequest, outcome: Outcome): void {
  try {
    if (request.wire.kind === "http" && request.wire.read === "whole" && outcome.status === 200 && outcome.contentType.startsWith("application/json")) {
      pool.harvest(JSON.parse(outcome.body.toString("utf8")));
    } else if (request.wire.kind === "grpc" && !request.wire.streaming && outcome.grpcCode === GrpcStatus.OK) {
      const output = request.method.output;
      pool.harvest(toJson(output, fromBinary(output, outcome.body), { useProtoFieldName: true }));
    }
  } catch {
    // An answer that does not parse is judged elsewhere; here it only yields no ids.
  }
}

function allMethods(rng: Rng): DescMethod[] {
  const methods = Object.values(ENGRAM_SERVICES).flatMap((service) => service.methods);
  // A seeded shuffle, so different seeds meet the methods in different orders.
  for (let i = methods.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [methods[i], methods[j]] = [methods[j] as DescMethod, methods[i] as DescMethod];
  }
  return methods;
}

/**
 * How much the floor of the memory series rose from its second quarter to its last. A collected heap swings by
 * hundreds of MB with large transient requests; a leak lifts the floor as well.
 */
function envelopeGrowth(series: readonly number[]): number {
  if (series.length < 4) return 0;
  const quarter = Math.floor(series.length / 4);
  return Math.min(...series.slice(-quarter)) - Math.min(...series.slice(quarter, 2 * quarter));
}

async function readyz(baseUrl: string, timeoutMs: number): Promise<number | string> {
  try {
    const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer();
    return response.status;
  } catch (e: unknown) {
    return e instanceof Error ? e.message : String(e);
  }
}

function logErrors(stdout: string): string[] {
  const errors: string[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const entry = JSON.parse(line) as { level?: number };
      if ((entry.level ?? 0) >= 50) errors.push(line.length > 2000 ? `${line.slice(0, 2000)}…` : line);
    } catch {
      // not a log line
    }
  }
  return errors;
}

function emptyReport(seed: number): FuzzReport {
  return {
    seed,
    requests: 0,
    byTransport: { rest: 0, connect: 0, grpc: 0 },
    statuses: {},
    succeeded: 0,
    succeededBy: {},
    failures: [],
    failureCount: 0,
    called: { rest: new Set(), connect: new Set(), grpc: new Set() },
    durationMs: 0,
    slowestMs: 0,
    slowest: "",
    memoryAfterWarmup: undefined,
    memoryAfterRun: undefined,
    memorySeries: [],
    memoryGrowthKb: 0,
    metricsBytes: 0,
    victimChanged: [],
    logErrors: [],
  };
}

function addFailure(report: FuzzReport, failure: Failure): void {
  report.failureCount++;
  if (report.failures.length < KEPT_FAILURES) report.failures.push(failure);
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const report = emptyReport(options.seed);
  const server: FuzzServer = await startFuzzServer({ maxRequestBytes: options.maxRequestBytes, embedder: options.embedder });
  const baseUrl = server.child.baseUrl;
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
  const grpcSender = new GrpcSender(server.port);
  const h2Sender = new H2Sender(server.port);
  const started = performance.now();
  try {
    const { keys, names } = await createUsers(server);
    const setupRng = new Rng(options.seed);
    const pool = new IdPool(setupRng);
    for (const name of Object.values(names)) pool.add("username", name);
    const canary = `zqxcanary${setupRng.int(1e9)}`;
    const victim = await seedOwner(baseUrl, keys.victim, canary);
    const fuzzSeed = await seedOwner(baseUrl, keys.fuzz, "fz");
    for (const answer of [...victim.answers, ...fuzzSeed.answers]) pool.harvest(answer);
    // Storage statistics are server-wide: an admin reads them.
    const stats = await rpc(baseUrl, "CoreService/GetStorageStats", {}, keys.admin);
    const vectorDimension = Number(stats["vector_dimension"] ?? 0) || 384;
    const before = await readVictim(baseUrl, keys.victim, victim);
    const secrets: Secrets = { canary, secrets: secretsOf(keys) };
    const vocabulary = protoVocabulary();
    const methods = allMethods(setupRng);
    const warmup = Math.min(Math.floor(options.requests / 10), 2000);
    const progressEvery = options.progressEvery ?? 1000;
    const sampleEvery = Math.max(100, Math.floor(options.requests / 20));
    let next = 0;
    let stopped = false;

    const send = (request: FuzzRequest): Promise<Outcome> => {
      const { wire } = request;
      if (wire.kind === "http") return sendHttp(agent, server.port, wire, options.timeoutMs);
      if (wire.kind === "grpc") return grpcSender.send(wire, options.timeoutMs);
      return h2Sender.send(wire, options.timeoutMs);
    };

    const checkServer = async (index: number): Promise<void> => {
      const rpcName = "readiness";
      const base = { seed: options.seed, index, rpc: rpcName, transport: "rest" as const, keyKind: "none" as const, variation: "valid" as const, request: "GET /readyz" };
      if (server.child.process.exitCode !== null || server.child.process.signalCode !== null) {
        addFailure(report, { ...base, problem: `server exited (${server.child.process.exitCode ?? server.child.process.signalCode})`, answer: server.child.stderr().slice(-4000) });
        stopped = true;
        return;
      }
      const status = await readyz(baseUrl, options.timeoutMs);
      if (status !== 200) addFailure(report, { ...base, problem: `/readyz answered ${status}`, answer: "" });
    };

    const worker = async (): Promise<void> => {
      while (!stopped && next < options.requests) {
        const index = next++;
        const rng = Rng.forRequest(options.seed, index);
        const request = buildRequest(index, methods, keys, { rng, pool, vocabulary, maxBytes: options.maxRequestBytes, vectorDimension });
        const outcome = await send(request);
        const rpcName = `${request.method.parent.name}/${request.method.name}`;
        report.requests++;
        report.byTransport[request.transport]++;
        report.called[request.transport].add(rpcName);
        const key = statusKey(request, outcome);
        report.statuses[key] = (report.statuses[key] ?? 0) + 1;
        if (outcome.ms > report.slowestMs) {
          report.slowestMs = outcome.ms;
          report.slowest = `${request.transport} ${rpcName} #${index}`;
        }
        options.onAnswer?.(rpcName, describeRequest(request, keys), describeOutcome(outcome));
        const problem = judge(request, outcome, secrets);
        if (problem !== undefined) {
          addFailure(report, {
            seed: options.seed, index, rpc: rpcName, transport: request.transport, keyKind: request.keyKind, variation: request.variation,
            problem, request: describeRequest(request, keys), answer: describeOutcome(outcome),
          });
        }
        const ok = outcome.error === undefined && (outcome.grpcCode === undefined ? (outcome.status ?? 500) < 300 && outcome.connectCode === undefined : outcome.grpcCode === GrpcStatus.OK);
        if (ok) {
          report.succeeded++;
          report.succeededBy[rpcName] = (report.succeededBy[rpcName] ?? 0) + 1;
          if (request.keyKind === "fuzz" || request.keyKind === "intruder") harvest(pool, request, outcome);
        }
        // The count now, before any await lets the other workers move it on.
        const done = report.requests;
        if (done === warmup) report.memoryAfterWarmup = memoryOf(server.child.process.pid);
        if (done % sampleEvery === 0) report.memorySeries.push(memoryOf(server.child.process.pid)?.anonKb ?? 0);
        if (done % progressEvery === 0) options.onProgress?.(done, report);
        if (done % 250 === 0) await checkServer(index);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency }, () => worker()));
    report.durationMs = performance.now() - started;
    await checkServer(report.requests);
    report.memoryAfterRun = memoryOf(server.child.process.pid);
    report.memoryGrowthKb = envelopeGrowth(report.memorySeries);
    report.metricsBytes = (await (await fetch(`${baseUrl}/metrics`)).arrayBuffer()).byteLength;
    if (!stopped) {
      const after = await readVictim(baseUrl, keys.victim, victim);
      report.victimChanged = Object.keys(before).filter((route) => before[route] !== after[route]);
    }
    const log = server.child.stdout() + server.child.stderr();
    report.logErrors.push(...logErrors(server.child.stdout()));
    for (const secret of secrets.secrets) if (log.includes(secret)) report.logErrors.push("the server log holds an API key secret");
    return report;
  } finally {
    agent.destroy();
    grpcSender.close();
    h2Sender.close();
    await server.stop();
  }
}
