// Sends one request of the crash loop over REST, Connect or gRPC and says what its client learnt: acknowledged (a
// success answer arrived), refused (a complete error answer arrived) or unknown (no answer: the server was killed
// while the request was in flight, so it may or may not have been applied).
import { callerFor, type Caller, type JsonObject, type TransportName } from "../harness/callers.js";

export type Answer =
  | { readonly kind: "acked"; readonly body: JsonObject }
  | { readonly kind: "refused"; readonly code: string; readonly message: string }
  | { readonly kind: "unknown"; readonly reason: string };

/** gRPC codes a call ends with when its connection dies rather than when the server answers. */
const CONNECTION_CODES = new Set(["unavailable", "internal", "canceled", "unknown"]);

/** No call of the loop takes this long unless the server hangs; a hang is reported, not waited out. */
const CALL_TIMEOUT_MS = 30_000;

export class HangError extends Error {}

export class Sender {
  readonly #callers: Map<TransportName, Caller>;
  readonly #killed: () => boolean;

  constructor(baseUrl: string, killed: () => boolean) {
    const port = Number(new URL(baseUrl).port);
    this.#callers = new Map((["rest", "connect", "grpc"] as const).map((t) => [t, callerFor(t, baseUrl, port)]));
    this.#killed = killed;
  }

  /**
   * Calls `rpc`. A call that fails without an answer is `unknown` once the killer has fired; before that it throws,
   * since the server stopped answering on its own.
   */
  async send(transport: TransportName, rpc: string, request: JsonObject, key: string): Promise<Answer> {
    const caller = this.#callers.get(transport) as Caller;
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new HangError(`${rpc} over ${transport} got no answer in ${CALL_TIMEOUT_MS} ms`)), CALL_TIMEOUT_MS);
    });
    try {
      const result = await Promise.race([caller.call(rpc, request, key), hang]);
      if (result.code === "ok") return { kind: "acked", body: result.body };
      if (transport === "grpc" && CONNECTION_CODES.has(result.code) && this.#killed()) return { kind: "unknown", reason: `${result.code}: ${result.message}` };
      return { kind: "refused", code: result.code, message: result.message };
    } catch (e: unknown) {
      if (e instanceof HangError || !this.#killed()) throw e;
      return { kind: "unknown", reason: e instanceof Error ? e.message : String(e) };
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    for (const caller of this.#callers.values()) caller.close();
  }
}
