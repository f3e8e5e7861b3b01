// The web console's own HTTP server, on its own port: /healthz, the console API and the built frontend.
import http from "node:http";
import type { Authenticator } from "../auth/authenticator.js";
import type { Config } from "../platform/config.js";
import type { Logger } from "../platform/logger.js";
import type { Metrics } from "../platform/metrics.js";
import type { Readiness } from "../platform/readiness.js";
import { ApiProxy } from "./api-proxy.js";
import { API_PREFIX, ConsoleApi } from "./console-api.js";
import { sendJson, sendText } from "./console-http.js";
import { ConsoleSessions } from "./console-sessions.js";
import { MetricsSampler } from "./metrics-sampler.js";
import { setSecurityHeaders } from "./security-headers.js";
import { builtConsolePath } from "../platform/build-output.js";
import { StaticFiles } from "./static-files.js";

/** How often the metrics are sampled, and how many samples are kept: one hour. */
export const SAMPLE_INTERVAL_MS = 5000;
export const SAMPLE_CAPACITY = 720;

export interface ConsoleDeps {
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly readiness: Readiness;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The port the data plane listens on (it may have been chosen by the system). */
  readonly dataPlanePort: number;
  /** The clock of session expiry and metric samples; tests pass a fake one. */
  readonly now: () => number;
}

export interface ConsoleServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startConsole(deps: ConsoleDeps): Promise<ConsoleServer> {
  const { config, logger } = deps;
  const sessions = new ConsoleSessions(
    { idleMs: config.consoleSessionIdleMs, maxMs: config.consoleSessionMaxMs, maxSessions: config.consoleMaxSessions },
    deps.now,
  );
  const proxy = new ApiProxy({ host: config.host, port: deps.dataPlanePort }, config.maxRequestBytes);
  const sampler = new MetricsSampler(deps.metrics, { intervalMs: SAMPLE_INTERVAL_MS, capacity: SAMPLE_CAPACITY, now: deps.now });
  const api = new ConsoleApi({ sessions, authenticator: deps.authenticator, proxy, sampler, metrics: deps.metrics, readiness: deps.readiness, logger });
  const files = new StaticFiles(config.consoleAssetsDir ?? builtConsolePath());

  const route = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    setSecurityHeaders(res);
    const url = req.url ?? "/";
    const queryAt = url.indexOf("?");
    const rawPath = queryAt === -1 ? url : url.slice(0, queryAt);
    const query = queryAt === -1 ? "" : url.slice(queryAt);
    if (rawPath === "/healthz") {
      res.setHeader("cache-control", "no-store");
      sendJson(res, 200, { status: "ok" });
    } else if (rawPath.startsWith(API_PREFIX)) {
      await api.handle(req, res, rawPath, query);
    } else {
      await files.serve(req, res, rawPath);
    }
  };
  const server = http.createServer(
    { headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs, keepAliveTimeout: config.idleTimeoutMs },
    (req, res) => {
      route(req, res).catch((e: unknown) => {
        logger.error({ err: e, path: (req.url ?? "").split("?", 1)[0] }, "console request failed");
        if (res.headersSent) res.destroy();
        else sendText(res, 500, "internal error");
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.consolePort, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  sampler.start();
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.consolePort;
  logger.info({ port }, "console listening");
  return {
    port,
    async close() {
      sampler.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Open event streams and keep-alive connections would hold close() forever.
      server.closeAllConnections();
      proxy.close();
      sessions.clear();
      await closed;
    },
  };
}
