import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { isHttps } from "./origin.ts";

/** The security headers of every answer but the /docs page's. */
const API_HEADERS = [
  ["X-Content-Type-Options", "nosniff"],
  ["Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"],
  ["Cache-Control", "no-store"],
  // No page of another site may embed these answers (no-cors reads, Spectre).
  ["Cross-Origin-Resource-Policy", "same-origin"],
] as const;

const HSTS = "max-age=31536000; includeSubDomains";

/**
 * Every response header costs time on every request, so JSON answers carry
 * the few an API needs (OWASP REST Security Cheat Sheet), and only the
 * browser page at /docs gets hono's full set of document headers (its CSP is
 * its own, src/http/docs.ts, which overwrite: false keeps). HSTS for a year
 * over HTTPS only: on plain HTTP it is ignored or wrong. All are set before
 * the answer exists, so they are part of it when it is built (changing a
 * built Response's headers costs several times more), and an API answer
 * costs no async call of its own.
 */
export function securityHeaders(
  { trustProxy }: { trustProxy: boolean },
): MiddlewareHandler<AppEnv> {
  const documentHeaders = secureHeaders({
    strictTransportSecurity: false,
    overwrite: false,
  });
  return (c, next) => {
    if (isHttps(c, trustProxy)) c.header("Strict-Transport-Security", HSTS);
    if (c.req.path === "/docs" || c.req.path.startsWith("/docs/")) {
      return documentHeaders(c, next);
    }
    for (const [name, value] of API_HEADERS) c.header(name, value);
    return next();
  };
}
