// Bounds the deadline a gRPC or Connect call asks for (grpc-timeout, connect-timeout-ms) to what a Node timer can
// hold. Connect arms a timer with the requested timeout; past 2^31 - 1 ms (about 24.8 days) Node fires the timer
// after 1 ms instead, so a client asking for a very long deadline ("99999999H", as some send for "none") would have
// its call cancelled at once with DEADLINE_EXCEEDED.

/** The longest delay a Node timer accepts. */
export const MAX_DEADLINE_MS = 2_147_483_647;

const GRPC_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000_001 };

/** The header with a too-long deadline replaced by the longest one; malformed values are left for Connect to refuse. */
export function boundedDeadline(header: Headers): Headers {
  const grpc = /^(\d{1,8})([HMSmun])$/.exec(header.get("grpc-timeout") ?? "");
  const grpcTooLong = grpc !== null && Number(grpc[1]) * (GRPC_UNIT_MS[grpc[2] as string] ?? 0) > MAX_DEADLINE_MS;
  const connect = header.get("connect-timeout-ms");
  const connectTooLong = connect !== null && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_DEADLINE_MS;
  if (!grpcTooLong && !connectTooLong) return header;
  const bounded = new Headers(header);
  // Whole seconds, so the value stays within the 8 digits gRPC allows and under the timer's limit.
  if (grpcTooLong) bounded.set("grpc-timeout", `${Math.floor(MAX_DEADLINE_MS / 1000)}S`);
  if (connectTooLong) bounded.set("connect-timeout-ms", String(MAX_DEADLINE_MS));
  return bounded;
}
