// The headers every console response carries: no inline script, no framing, no sniffing, no referrer.
import type http from "node:http";

/**
 * The frontend is built without inline scripts, so the policy can refuse them; inline styles stay allowed for the
 * chart library, which sizes its canvas with style attributes.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

export function setSecurityHeaders(res: http.ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}
