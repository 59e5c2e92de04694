import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { CONSOLE_PATH } from "./console-path.ts";
import type { RequestScope } from "./request.ts";
import { answerFile, staticFiles } from "./static-files.ts";

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
 * into console/dist/ (committed), read and gzipped once on first use
 * (static-files.ts). Plain routes, not
 * API operations: the OpenAPI document does not list them. Every answer
 * revalidates (`no-cache`) against its ETag, so a new release's files are
 * seen at once; the page names its files with their content hash anyway.
 */
export function mountConsole(app: OpenAPIHono<AppEnv>, scope: RequestScope) {
  const read = staticFiles();
  for (const [path, { file, type }] of Object.entries(FILES)) {
    app.get(
      path,
      scope.handler(async (c) =>
        answerFile(
          c,
          await read(file, () => Deno.readFile(new URL(file, DIST))),
          {
            "content-type": type,
            "content-security-policy": CONSOLE_CSP,
            "cache-control": "no-cache",
          },
        )
      ),
    );
  }
}
