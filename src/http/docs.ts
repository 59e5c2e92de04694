import type { OpenAPIHono } from "@hono/zod-openapi";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { AppEnv } from "./env.ts";

const ASSETS = "/docs/assets";

/**
 * What /docs and its assets may load: only files of this service, and calls
 * only to this service. No inline script, so the page needs no
 * 'unsafe-inline' and an injected script could not run either.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>User administration API</title>
<link rel="icon" type="image/png" href="${ASSETS}/favicon-32x32.png">
<link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${ASSETS}/swagger-ui-bundle.js"></script>
<script src="${ASSETS}/init.js"></script>
</body>
</html>
`;

/** Swagger UI's start-up, as a file so that the CSP can forbid inline script. */
const initScript = (specUrl: string) =>
  `window.ui = SwaggerUIBundle(${
    JSON.stringify({
      url: specUrl,
      dom_id: "#swagger-ui",
      deepLinking: true,
      displayRequestDuration: true,
      // The default validator is a remote service: the page stays offline.
      validatorUrl: null,
    })
  });\n`;

const TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  png: "image/png",
};
const DIST_FILES = [
  "swagger-ui.css",
  "swagger-ui-bundle.js",
  "favicon-32x32.png",
];

/**
 * Swagger UI at /docs, its assets served from the npm package swagger-ui-dist,
 * not a CDN: the page works where neither browser nor service has internet.
 */
export function mountDocs(app: OpenAPIHono<AppEnv>, specUrl: string) {
  const dist = dirname(
    createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"),
  );
  const files = new Map<string, () => Promise<Uint8Array>>([
    [
      "init.js",
      () => Promise.resolve(new TextEncoder().encode(initScript(specUrl))),
    ],
    ...DIST_FILES.map((f) => [f, () => Deno.readFile(join(dist, f))] as const),
  ]);
  const cache = new Map<string, Uint8Array>();

  app.get(
    "/docs",
    (c) => c.html(PAGE, 200, { "content-security-policy": DOCS_CSP }),
  );
  app.get(`${ASSETS}/:file`, async (c) => {
    const file = c.req.param("file");
    const read = files.get(file);
    if (!read) return c.notFound();
    let body = cache.get(file);
    if (!body) {
      body = await read();
      cache.set(file, body);
    }
    return c.body(body as Uint8Array<ArrayBuffer>, 200, {
      "content-type": TYPES[file.slice(file.lastIndexOf(".") + 1)],
      "content-security-policy": DOCS_CSP,
      "cache-control": "public, max-age=86400",
    });
  });
}
