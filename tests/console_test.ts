/**
 * The admin console as the service serves it, without a browser: its page
 * and files under /admin, their headers, and what the OpenAPI document
 * leaves out. (tests/console_browser_test.ts uses it in Chromium.)
 */
import { gzipSync } from "node:zlib";
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

const CONSOLE_CSP = "default-src 'none'; script-src 'self'; " +
  "style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

Deno.test("/admin serves the console's page, whose scripts and styles are files of the service under a CSP without inline code", async () => {
  const svc = await service();
  const page = await svc.fetch("/admin");
  assertEquals(page.status, 200);
  assertEquals(page.headers.get("content-type"), "text/html; charset=utf-8");
  assertEquals(page.headers.get("content-security-policy"), CONSOLE_CSP);
  assertEquals(page.headers.get("x-content-type-options"), "nosniff");
  assertEquals(page.headers.get("x-frame-options"), "SAMEORIGIN");
  assertEquals(page.headers.get("cache-control"), "no-cache");
  const html = await page.text();
  const scripts = [...html.matchAll(/<script\b([^>]*)>([^<]*)<\/script>/g)];
  assertEquals(scripts.length, 1);
  for (const [, attributes, body] of scripts) {
    assert(
      /\bsrc="\/admin\/app\.js\?v=[0-9a-f]+"/.test(attributes),
      attributes,
    );
    assertEquals(body, "", "no inline script");
  }
  assert(!/<style\b|\sstyle=/.test(html), "no inline style");
  assert(/href="\/admin\/app\.css\?v=[0-9a-f]+"/.test(html));

  const types = {
    "/admin/app.js": "text/javascript; charset=utf-8",
    "/admin/app.css": "text/css; charset=utf-8",
  };
  for (const [path, type] of Object.entries(types)) {
    const res = await svc.fetch(path);
    assertEquals(res.status, 200, path);
    assertEquals(res.headers.get("content-type"), type, path);
    assertEquals(res.headers.get("content-security-policy"), CONSOLE_CSP);
    const etag = res.headers.get("etag");
    assert(etag && /^"[0-9a-f]+"$/.test(etag), `${path}: ${etag}`);
    assert((await res.arrayBuffer()).byteLength > 0);
    const again = await svc.fetch(path, { headers: { "if-none-match": etag } });
    await again.body?.cancel();
    assertEquals(again.status, 304, `${path} revalidates`);
  }
});

Deno.test("an unknown path under /admin answers the API's 404 with the API's headers", async () => {
  const svc = await service();
  const res = await svc.fetch("/admin/nowhere.js");
  assertEquals(res.status, 404);
  assertEquals(await res.json(), { error: "Not found" });
  assertEquals(
    res.headers.get("content-security-policy"),
    "default-src 'none'; frame-ancestors 'none'",
  );
  assertEquals(res.headers.get("cache-control"), "no-store");
});

Deno.test("the console's routes are not operations of the OpenAPI document", async () => {
  const svc = await service();
  const doc = await (await svc.fetch("/openapi.json")).json();
  const paths = Object.keys(doc.paths);
  assert(paths.includes("/api/users"));
  assertEquals(paths.filter((p) => p.startsWith("/admin")), []);
});

Deno.test("the built console is at most 200 KiB of script and style, gzipped", async () => {
  let total = 0;
  for (const file of ["app.js", "app.css"]) {
    const bytes = await Deno.readFile(
      new URL(`../console/dist/${file}`, import.meta.url),
    );
    total += gzipSync(bytes, { level: 9 }).length;
  }
  assert(total <= 200 * 1024, `${total} bytes gzipped`);
});
