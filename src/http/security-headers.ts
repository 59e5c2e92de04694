import type { Context, TypedResponse } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { isConsolePath } from "./console-path.ts";
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

/** Marks an answer `apiAnswers` made with every header already on it. */
const HEADED = Symbol("headed");

/**
 * Makes an API answer, JSON text (or its stream) typed as the `T` it
 * serialises, with every header it carries given at once: its content type,
 * the handler's, then the request id and the API's security headers (the
 * handler's cannot override them), as `answerHeaders` would set them. A
 * Response made with a text body and its headers is handed to the HTTP
 * server as it was made; one whose headers change afterwards is made again
 * from its parts (the body encoded twice), which a list of 1,000 users
 * feels on every request. For the list and `me`, the answers asked most:
 * any other answer gets its headers from `answerHeaders`, whose five
 * `Headers.set` calls check each name and value again.
 */
export function apiAnswers({ trustProxy }: { trustProxy: boolean }) {
  return <T, S extends 200 | 201>(
    c: Context<AppEnv>,
    body: string | ReadableStream<Uint8Array>,
    status: S,
    headers: Record<string, string> = {},
  ): TypedResponse<T, S, "json"> => {
    const all: Record<string, string> = {
      "Content-Type": "application/json",
      ...headers,
    };
    for (const [name, value] of API_HEADERS) all[name] = value;
    all["X-Request-Id"] = c.get("requestId");
    if (isHttps(c, trustProxy)) all["Strict-Transport-Security"] = HSTS;
    const res = new Response(body, { status, headers: all });
    (res as Response & { [HEADED]?: true })[HEADED] = true;
    // The body is T's JSON, written by the caller rather than by c.json.
    return res as unknown as TypedResponse<T, S, "json">;
  };
}

/**
 * Gives a request's answer the headers every answer carries: its request id
 * and the security headers. JSON answers carry the few an API needs (OWASP
 * REST Security Cheat Sheet); only the browser pages at /docs and /admin get
 * hono's full set of document headers (each CSP is its page's own,
 * src/http/docs.ts and src/http/console.ts, which overwrite: false keeps).
 * HSTS for a year over HTTPS only: on plain HTTP it is ignored or wrong.
 *
 * They are set on the answer once it is made, never prepared with
 * `c.header`: Hono turns prepared headers into a Headers object that the
 * Response then copies, sorted, a cost a small answer feels on every
 * request. Set last, they are the API's, not a handler's: none can change
 * them.
 */
export function answerHeaders(
  { trustProxy }: { trustProxy: boolean },
): (
  c: Context<AppEnv>,
  requestId: string,
  res: Response,
) => Response | Promise<Response> {
  const documentHeaders = secureHeaders({
    strictTransportSecurity: false,
    overwrite: false,
  });
  const onPage = async (c: Context<AppEnv>, res: Response) => {
    c.res = res;
    await documentHeaders(c, async () => {});
    return c.res;
  };
  return (c, requestId, res) => {
    if ((res as Response & { [HEADED]?: true })[HEADED]) return res;
    const path = c.req.path;
    const page = path === "/docs" || path.startsWith("/docs/") ||
      isConsolePath(path);
    const https = isHttps(c, trustProxy);
    const headers = res.headers;
    // A page's path that answered no page of its own (a 404 under /admin)
    // is an API answer.
    if (!page || !headers.has("content-security-policy")) {
      for (const [name, value] of API_HEADERS) headers.set(name, value);
    }
    headers.set("X-Request-Id", requestId);
    if (https) headers.set("Strict-Transport-Security", HSTS);
    return page ? onPage(c, res) : res;
  };
}
