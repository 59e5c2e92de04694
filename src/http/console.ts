import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { CONSOLE_PATH } from "./console-path.ts";
import type { RequestScope } from "./request.ts";

/**
 * What the console's page may load: its own files, calls to this service,
 * nothing inline and nothing from another origin.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const DIST = new URL("../../console/dist/", import.meta.url);

const FILES: Record<string, { file: string; type: string }> = {
  [CONSOLE_PATH]: { file: "index.html", type: "text/html; charset=utf-8" },
  [`${CONSOLE_PATH}/`]: {
    file: "index.html",
    type: "text/html; charset=utf-8",
  },
  [`${CONSOLE_PATH}/app.js`]: {
    file: "app.js",
    type: "text/javascript; charset=utf-8",
  },
  [`${CONSOLE_PATH}/app.css`]: {
    file: "app.css",
    type: "text/css; charset=utf-8",
  },
  [`${CONSOLE_PATH}/icon.svg`]: { file: "icon.svg", type: "image/svg+xml" },
  // Where browsers look for an icon on every page of the origin (/docs too).
  "/favicon.ico": { file: "icon.svg", type: "image/svg+xml" },
};

/**
 * The admin console at /admin: the files `deno task build:console` built
 * into console/dist/ (committed), read once on first use. Plain routes, not
 * API operations: the OpenAPI document does not list them. Every answer
 * revalidates (`no-cache`) against its ETag, so a new release's files are
 * seen at once; the page names its files with their content hash anyway.
 */
export function mountConsole(app: OpenAPIHono<AppEnv>, scope: RequestScope) {
  const cache = new Map<string, { body: Uint8Array; etag: string }>();
  const read = async (file: string) => {
    let hit = cache.get(file);
    if (!hit) {
      const body = await Deno.readFile(new URL(file, DIST));
      const digest = new Uint8Array(
        await crypto.subtle.digest("SHA-256", body),
      );
      const etag = `"${
        Array.from(digest.slice(0, 12), (b) => b.toString(16).padStart(2, "0"))
          .join("")
      }"`;
      hit = { body, etag };
      cache.set(file, hit);
    }
    return hit;
  };
  for (const [path, { file, type }] of Object.entries(FILES)) {
    app.get(
      path,
      scope.handler(async (c) => {
        const { body, etag } = await read(file);
        const headers = {
          "content-type": type,
          "content-security-policy": CONSOLE_CSP,
          "cache-control": "no-cache",
          etag,
        };
        if (c.req.header("if-none-match") === etag) {
          return c.body(null, 304, headers);
        }
        return c.body(body as Uint8Array<ArrayBuffer>, 200, headers);
      }),
    );
  }
}
