import type { Context } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { isConsolePath } from "./console.ts";
import { isHttps } from "./origin.ts";

/** The security headers of every answer but the pages' (/docs, /admin). */
const API_HEADERS = [
  ["X-Content-Type-Options", "nosniff"],
  ["Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"],
  ["Cache-Control", "no-store"],
  // No page of another site may embed these answers (no-cors reads, Spectre).
  ["Cross-Origin-Resource-Policy", "same-origin"],
] as const;

const HSTS = "max-age=31536000; includeSubDomains";

/**
 * Gives a request's answer the headers every answer carries: its request id
 * and the security headers. JSON answers carry the few an API needs (OWASP
 * REST Security Cheat Sheet); only the browser pages at /docs and /admin get
 * hono's full set of document headers (each CSP is its page's own,
 * src/http/docs.ts and src/http/console.ts, which overwrite: false keeps).
 * HSTS for a year over HTTPS only: on plain HTTP it is ignored or wrong.
 *
 * An API answer gets them before it is made (`before`), as headers the
 * context holds for whatever answer it makes (every answer of the API is
 * made through it, errors and the deadline's included): the answer is then
 * made once, with all its headers. Setting them on an answer already made
 * would cost the body a copy: Deno prepares a made answer for sending, body
 * and headers, and touching its headers throws that away. A page's answer
 * gets them once it is made (`after`), where its own CSP decides.
 */
export function answerHeaders({ trustProxy }: { trustProxy: boolean }): {
  before(c: Context<AppEnv>, requestId: string): void;
  after(
    c: Context<AppEnv>,
    requestId: string,
    res: Response,
  ): Response | Promise<Response>;
} {
  const documentHeaders = secureHeaders({
    strictTransportSecurity: false,
    overwrite: false,
  });
  const isPage = (path: string) =>
    path === "/docs" || path.startsWith("/docs/") || isConsolePath(path);
  return {
    before(c, requestId) {
      if (isPage(c.req.path)) return;
      for (const [name, value] of API_HEADERS) c.header(name, value);
      c.header("X-Request-Id", requestId);
      if (isHttps(c, trustProxy)) c.header("Strict-Transport-Security", HSTS);
    },
    after: (c, requestId, res) =>
      isPage(c.req.path) ? onPage(c, requestId, res) : res,
  };

  async function onPage(c: Context<AppEnv>, requestId: string, res: Response) {
    const headers = res.headers;
    // A page's path that answered no page of its own (a 404 under
    // /admin) is an API answer.
    if (!headers.has("content-security-policy")) {
      for (const [name, value] of API_HEADERS) headers.set(name, value);
    }
    headers.set("X-Request-Id", requestId);
    if (isHttps(c, trustProxy)) {
      headers.set("Strict-Transport-Security", HSTS);
    }
    c.res = res;
    await documentHeaders(c, async () => {});
    return c.res;
  }
}
