import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService();

Deno.test("/docs loads every file it needs from the service itself, under a CSP without inline script", async () => {
  const svc = await service();
  const page = await svc.fetch("/docs");
  assertEquals(page.status, 200);
  const csp = page.headers.get("content-security-policy")!;
  assertMatch(csp, /script-src 'self'(;|$)/);
  assert(!csp.includes("unsafe"), csp);
  const html = await page.text();
  assert(!/<script>/.test(html), "no inline script");
  const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  assertEquals(urls.length, 4, urls.join(" "));
  for (const url of urls) {
    assertMatch(url, /^\/docs\/assets\/[\w./-]+$/, "same origin, no CDN");
    const res = await svc.fetch(url);
    assertEquals(res.status, 200, url);
    assertMatch(res.headers.get("content-type")!, /^(text\/|image\/png)/);
    const body = await res.text();
    assert(body.length > 0, url);
    if (url.endsWith("/init.js")) {
      assertMatch(
        body,
        /"url":"\/openapi.json"/,
        "Swagger UI shows the served document",
      );
    }
  }
});

Deno.test("the API answers under a CSP that lets nothing load", async () => {
  const svc = await service();
  for (const path of ["/api/auth/me", "/openapi.json", "/nowhere"]) {
    const res = await svc.fetch(path);
    await res.body?.cancel();
    assertEquals(
      res.headers.get("content-security-policy"),
      "default-src 'none'; frame-ancestors 'none'",
      path,
    );
  }
});

Deno.test("/docs/assets serves only the files it names", async () => {
  const svc = await service();
  for (
    const file of [
      "package.json",
      "swagger-ui-dist/package.json",
      "swagger-ui-dist/index.html",
      "swagger-ui-dist/../../package.json",
      "..%2Fpackage.json",
    ]
  ) {
    const res = await svc.fetch(`/docs/assets/${file}`);
    assertEquals(res.status, 404, file);
    assertEquals(await res.json(), { error: "Not found" });
  }
});
