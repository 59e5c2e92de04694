import type { OpenAPIHono } from "@hono/zod-openapi";
import { swaggerUI } from "@hono/swagger-ui";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { MSG } from "./messages.ts";
import type { RequestScope } from "./request.ts";
import { answerFile, staticFiles } from "./static-files.ts";
// Its files are read from disk (below), not imported: this import puts the
// package in the module graph, so that the service's start fetches it.
import "swagger-ui-dist/package.json" with { type: "json" };

/** Where Swagger UI answers. */
export const DOCS_PATH = "/docs";
const ASSETS = `${DOCS_PATH}/assets`;
/** Where @hono/swagger-ui looks for swagger-ui-dist's files, given ASSETS as its base. */
const DIST = `${ASSETS}/swagger-ui-dist`;

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

/**
 * @hono/swagger-ui's page with its asset URLs under this service, and the
 * start-up script as a file instead of inline.
 */
const docsPage = (specUrl: string) =>
  swaggerUI({
    url: specUrl,
    title: "User administration API",
    baseUrl: ASSETS,
    manuallySwaggerUIHtml: ({ css, js }) =>
      [
        `<link rel="icon" type="image/png" href="${DIST}/favicon-32x32.png">`,
        ...css.map((href) => `<link rel="stylesheet" href="${href}">`),
        `<div id="swagger-ui"></div>`,
        ...js.map((src) => `<script src="${src}"></script>`),
        `<script src="${ASSETS}/init.js"></script>`,
      ].join("\n"),
  });

/**
 * Swagger UI's start-up, as a file so that the CSP can forbid inline script.
 * The document's `servers` name `deno task start`'s default address, for
 * generated clients; this page calls the service that serves it instead.
 * Swagger UI's parse of an OpenAPI 3.1 document is most of its draw time:
 * it is given only what a person uses.
 */
const initScript = (specUrl: string) =>
  `const config = ${
    JSON.stringify({
      url: specUrl,
      dom_id: "#swagger-ui",
      deepLinking: true,
      displayRequestDuration: true,
      // The default validator is a remote service: the page stays offline.
      validatorUrl: null,
      // The schemas are shown in each operation; a list of them all beside
      // doubles what the page draws.
      defaultModelsExpandDepth: -1,
    })
  };
fetch(config.url).then((r) => r.json()).then((spec) => {
  spec.servers = [{ url: window.location.origin, description: "This service" }];
  // Each GET's HEAD twin is for generated clients; a person needs it not.
  for (const path of Object.values(spec.paths)) delete path.head;
  delete config.url;
  window.ui = SwaggerUIBundle({ ...config, spec });
});
`;

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
export function mountDocs(
  app: OpenAPIHono<AppEnv>,
  specUrl: string,
  scope: RequestScope,
) {
  const dist = dirname(
    createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"),
  );
  const files = new Map<string, () => Promise<Uint8Array>>([
    [
      `${ASSETS}/init.js`,
      () => Promise.resolve(new TextEncoder().encode(initScript(specUrl))),
    ],
    ...DIST_FILES.map((f) =>
      [`${DIST}/${f}`, () => Deno.readFile(join(dist, f))] as const
    ),
  ]);
  const read = staticFiles();

  const page = docsPage(specUrl);
  app.get(
    DOCS_PATH,
    scope.handler(async (c) => {
      c.header("content-security-policy", DOCS_CSP);
      // The page is a handler of plain Hono: it answers, never calls next.
      const res = await page(c as never, () => Promise.resolve());
      if (!res) throw new Error("Swagger UI's page answered nothing");
      return res;
    }),
  );
  app.get(
    `${ASSETS}/*`,
    scope.handler(async (c) => {
      const file = files.get(c.req.path);
      if (!file) return errorResponse(c, 404, MSG.notFound);
      return answerFile(c, await read(c.req.path, file), {
        "content-type":
          TYPES[c.req.path.slice(c.req.path.lastIndexOf(".") + 1)],
        "content-security-policy": DOCS_CSP,
        "cache-control": "public, max-age=86400",
      });
    }),
  );
}
