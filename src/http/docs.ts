import type { OpenAPIHono } from "@hono/zod-openapi";
import { swaggerUI } from "@hono/swagger-ui";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { AppEnv } from "./env.ts";

const ASSETS = "/docs/assets";
const FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
};

/**
 * Swagger UI at /docs, its assets served from the npm package, not a CDN:
 * the page works where the service has no internet.
 */
export function mountDocs(app: OpenAPIHono<AppEnv>, specUrl: string) {
  const dist = dirname(
    createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"),
  );
  const cache = new Map<string, Uint8Array>();
  app.get(
    "/docs",
    swaggerUI({
      url: specUrl,
      baseUrl: ASSETS,
      title: "User administration API",
      persistAuthorization: true,
    }),
  );
  app.get(`${ASSETS}/swagger-ui-dist/:file`, async (c) => {
    const file = c.req.param("file");
    const type = FILES[file];
    if (!type) return c.notFound();
    let body = cache.get(file);
    if (!body) {
      body = await Deno.readFile(join(dist, file));
      cache.set(file, body);
    }
    return c.body(body as Uint8Array<ArrayBuffer>, 200, {
      "content-type": type,
      "cache-control": "public, max-age=86400",
    });
  });
}
