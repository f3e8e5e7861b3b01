// The interceptor that authenticates every call, the same way over every transport.
import type { Interceptor } from "@connectrpc/connect";

export function bearerAuth(apiKey: string): Interceptor {
  return (next) => async (req) => {
    req.header.set("authorization", `Bearer ${apiKey}`);
    return next(req);
  };
}
