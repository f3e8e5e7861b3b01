// The console's API under /console/api/: sign-in, session, sign-out, health, and the proxy to the data plane,
// behind the origin check, the session cookie and the CSRF token.
import type http from "node:http";
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";
import type { Logger } from "../platform/logger.js";
import type { Readiness } from "../platform/readiness.js";
import type { ApiProxy } from "./api-proxy.js";
import { readBoundedBody } from "../transport/request-body.js";
import { SESSION_COOKIE, clearedSessionCookie, cookieValue, methodNotAllowed, refuse, sameOrigin, sendJson, sessionCookie, tooLarge } from "./console-http.js";
import { csrfMatches, type ConsoleSession, type ConsoleSessions } from "./console-sessions.js";
import { SIGN_IN_REFUSED, verifyKeyOf } from "./console-sign-in.js";
import type { MetricsSampler } from "./metrics-sampler.js";
import type { Metrics } from "../platform/metrics.js";
import { providerCostRows } from "./provider-costs.js";

export const API_PREFIX = "/console/api/";

/** A sign-in body holds a username and a key: anything longer is not one. */
export const SIGN_IN_MAX_BYTES = 16 * 1024;

export interface ConsoleApiDeps {
  readonly sessions: ConsoleSessions;
  readonly authenticator: Authenticator;
  readonly proxy: ApiProxy;
  readonly sampler: MetricsSampler;
  /** The per-key provider totals (see provider-costs.ts). */
  readonly metrics: Pick<Metrics, "providerCalls" | "providerTokens" | "providerSeconds">;
  readonly readiness: Readiness;
  readonly logger: Logger;
}

/** A `.` or `..` segment, as a WHATWG URL parser sees one: a backslash separates too, and `%2e` is a dot. */
export function hasDotSegment(path: string): boolean {
  return path.split(/[/\\]/).some((segment) => {
    const dots = segment.replace(/%2e/gi, ".");
    return dots === "." || dots === "..";
  });
}

interface SignedIn {
  readonly session: ConsoleSession;
  readonly principal: Principal;
}

export class ConsoleApi {
  readonly #deps: ConsoleApiDeps;

  constructor(deps: ConsoleApiDeps) {
    this.#deps = deps;
  }

  /** Answers a request whose path starts with API_PREFIX; `rawPath` is the path as sent, `query` includes its "?". */
  async handle(req: http.IncomingMessage, res: http.ServerResponse, rawPath: string, query: string): Promise<void> {
    res.setHeader("cache-control", "no-store");
    // A page of another origin may not drive the console with the person's cookie, sign-in included.
    if (!sameOrigin(req)) {
      refuse(req, res, 403, { error: "cross-origin request refused" });
      return;
    }
    const route = rawPath.slice(API_PREFIX.length);
    switch (route) {
      case "sign-in":
        if (this.#allow(req, res, ["POST"])) await this.#signIn(req, res);
        return;
      case "session":
        if (this.#allow(req, res, ["GET", "HEAD"])) this.#session(req, res);
        return;
      case "sign-out":
        if (this.#allow(req, res, ["POST"])) this.#signOut(req, res);
        return;
      case "health":
        if (this.#allow(req, res, ["GET", "HEAD"])) await this.#health(req, res);
        return;
    }
    if (!route.startsWith("v2/")) {
      refuse(req, res, 404, { error: `no console route ${rawPath.slice(0, 200)}` });
    } else if (hasDotSegment(route)) {
      // The data plane's URL parser would resolve them and let the call leave /v2/.
      refuse(req, res, 400, { error: "path refused: no . or .. segments" });
    } else {
      await this.#proxy(req, res, `/${route}${query}`);
    }
  }

  #allow(req: http.IncomingMessage, res: http.ServerResponse, methods: readonly string[]): boolean {
    if (methods.includes(req.method ?? "")) return true;
    methodNotAllowed(req, res, methods);
    return false;
  }

  /**
   * The caller's live session, with its key authenticated again: a key revoked or rotated since sign-in ends the
   * session at once, and the role is the current one. Answers 401 itself when there is none.
   */
  #signedIn(req: http.IncomingMessage, res: http.ServerResponse): SignedIn | undefined {
    const { sessions, authenticator } = this.#deps;
    const session = sessions.use(cookieValue(req, SESSION_COOKIE));
    const principal = session === undefined ? undefined : verifyKeyOf(authenticator, session.username, session.apiKey);
    if (session === undefined || principal === undefined) {
      if (session !== undefined) sessions.destroy(session.id);
      // A cookie that no longer names a session is cleared, so the browser stops sending it.
      if (req.headers.cookie?.includes(`${SESSION_COOKIE}=`) === true) res.setHeader("set-cookie", clearedSessionCookie());
      refuse(req, res, 401, { error: "signed out" });
      return undefined;
    }
    return { session, principal };
  }

  /** Every request that may change something carries the session's CSRF token; GET and HEAD change nothing. */
  #csrfChecked(req: http.IncomingMessage, res: http.ServerResponse, session: ConsoleSession): boolean {
    if (req.method === "GET" || req.method === "HEAD" || csrfMatches(session, req.headers["x-csrf-token"])) return true;
    refuse(req, res, 403, { error: "missing or wrong CSRF token" });
    return false;
  }

  #sessionBody(signedIn: SignedIn): Record<string, string> {
    return {
      username: signedIn.principal.username,
      role: signedIn.principal.role,
      csrf_token: signedIn.session.csrfToken,
      expires_at: new Date(this.#deps.sessions.expiresAt(signedIn.session)).toISOString(),
    };
  }

  async #signIn(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await readBoundedBody(req, res, SIGN_IN_MAX_BYTES);
    if (body === "too_large") return tooLarge(res, SIGN_IN_MAX_BYTES);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return sendJson(res, 400, { error: "body must be JSON: {\"username\": \"...\", \"api_key\": \"...\"}" });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return sendJson(res, 400, { error: "body must be a JSON object: {\"username\": \"...\", \"api_key\": \"...\"}" });
    }
    const fields = parsed as Record<string, unknown>;
    for (const field of ["username", "api_key"]) {
      const value = fields[field];
      if (typeof value !== "string" || value === "") return sendJson(res, 400, { error: `${field} is required and must be a non-empty string`, field });
    }
    const username = fields["username"] as string;
    const principal = verifyKeyOf(this.#deps.authenticator, username, fields["api_key"] as string);
    if (principal === undefined) {
      this.#deps.logger.info({ username: username.slice(0, 64) }, "console sign-in refused");
      return sendJson(res, 401, { error: SIGN_IN_REFUSED });
    }
    // A browser signing in again leaves no second session behind.
    const previous = cookieValue(req, SESSION_COOKIE);
    if (previous !== undefined) this.#deps.sessions.destroy(previous);
    const session = this.#deps.sessions.create(principal.username, fields["api_key"] as string);
    this.#deps.logger.info({ username: principal.username, key_id: principal.keyId }, "console sign-in");
    res.setHeader("set-cookie", sessionCookie(session.id, this.#deps.sessions.cookieMaxAgeSeconds));
    sendJson(res, 200, this.#sessionBody({ session, principal }));
  }

  #session(req: http.IncomingMessage, res: http.ServerResponse): void {
    const signedIn = this.#signedIn(req, res);
    if (signedIn !== undefined) sendJson(res, 200, this.#sessionBody(signedIn));
  }

  #signOut(req: http.IncomingMessage, res: http.ServerResponse): void {
    const signedIn = this.#signedIn(req, res);
    if (signedIn === undefined || !this.#csrfChecked(req, res, signedIn.session)) return;
    this.#deps.sessions.destroy(signedIn.session.id);
    res.setHeader("set-cookie", clearedSessionCookie());
    res.writeHead(204);
    res.end();
  }

  async #health(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const signedIn = this.#signedIn(req, res);
    if (signedIn === undefined) return;
    const { readiness, proxy, sampler } = this.#deps;
    const storage = await proxy.getJson("/v2/core/storage/stats", signedIn.session.apiKey);
    // Metrics are server-wide: only an admin may see them, or owners would read each other's load and timings.
    let series = null;
    if (signedIn.principal.role === "admin") {
      await sampler.sampleIfDue();
      series = sampler.series();
    }
    // What each key spent on external providers: every key for an admin, the signed-in key alone for anyone else.
    const provider_costs = await providerCostRows(this.#deps.metrics, signedIn.principal.role === "admin" ? undefined : signedIn.principal.keyId);
    const reason = readiness.reason;
    sendJson(res, 200, { readiness: reason === undefined ? { status: "ready" } : { status: "not_ready", reason }, storage, series, provider_costs });
  }

  async #proxy(req: http.IncomingMessage, res: http.ServerResponse, target: string): Promise<void> {
    const signedIn = this.#signedIn(req, res);
    if (signedIn === undefined || !this.#csrfChecked(req, res, signedIn.session)) return;
    await this.#deps.proxy.forward(req, res, signedIn.session.apiKey, target);
  }
}
