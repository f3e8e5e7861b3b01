// Small request and response helpers shared by the console's routes: JSON answers, bounded bodies, cookies, origin.
import type http from "node:http";
import { abandonBody } from "../transport/request-body.js";

export const SESSION_COOKIE = "engram_console";

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const bytes = Buffer.from(JSON.stringify(body), "utf8");
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": String(bytes.byteLength) });
  res.end(bytes);
}

export function sendText(res: http.ServerResponse, status: number, text: string): void {
  if (res.headersSent) return;
  const bytes = Buffer.from(text, "utf8");
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": String(bytes.byteLength) });
  res.end(bytes);
}

/** Answers without reading the request's body, keeping the connection usable for the next request. */
export function refuse(req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown): void {
  abandonBody(req, res);
  sendJson(res, status, body);
}

export function methodNotAllowed(req: http.IncomingMessage, res: http.ServerResponse, allowed: readonly string[]): void {
  res.setHeader("allow", allowed.join(", "));
  refuse(req, res, 405, { error: `${req.method ?? ""} is not allowed here; use ${allowed.join(" or ")}` });
}

export function tooLarge(res: http.ServerResponse, maxBytes: number): void {
  sendJson(res, 413, { error: `request body over ${maxBytes} bytes` });
}

/** The value of one cookie of the request, if sent. */
export function cookieValue(req: http.IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(id: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`;
}

export function clearedSessionCookie(): string {
  return sessionCookie("", 0);
}

/**
 * False when the request names an Origin other than the console's own. The scheme is not compared: a TLS-terminating
 * proxy in front of the console makes the browser's origin https while the console itself sees plain HTTP.
 */
export function sameOrigin(req: http.IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const host = req.headers.host;
  if (host === undefined) return false;
  try {
    const parsed = new URL(origin);
    return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.host === new URL(`http://${host}`).host;
  } catch {
    // "null" (sandboxed frames, some redirects) and anything unparsable are foreign.
    return false;
  }
}
