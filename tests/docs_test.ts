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

Deno.test("the document, Swagger UI's files and the console's travel gzipped to a client that takes gzip, and revalidate with their ETag", async () => {
  const svc = await service();
  const pageFiles = (await (await svc.fetch("/admin")).text()).matchAll(
    /(?:src|href)="(\/admin\/[^"?]+)/g,
  );
  const paths = [
    "/openapi.json",
    "/docs/assets/swagger-ui-dist/swagger-ui-bundle.js",
    "/docs/assets/swagger-ui-dist/swagger-ui.css",
    "/admin",
    ...[...pageFiles].map((m) => m[1]),
  ];
  assertEquals(paths.length, 7, paths.join(" "));
  for (const path of paths) {
    const plain = await svc.fetch(path, {
      headers: { "accept-encoding": "identity" },
    });
    const plainBytes = new Uint8Array(await plain.arrayBuffer());
    assertEquals(plain.headers.get("content-encoding"), null, path);
    const zipped = await svc.fetch(path, {
      headers: { "accept-encoding": "br;q=1, gzip;q=0.8" },
    });
    assertEquals(
      [zipped.status, zipped.headers.get("content-encoding")],
      [200, "gzip"],
      path,
    );
    assertEquals(zipped.headers.get("vary"), "Accept-Encoding", path);
    const travelled = new Uint8Array(await zipped.arrayBuffer());
    assert(
      travelled.length < plainBytes.length,
      `${path}: ${travelled.length} bytes`,
    );
    // Compared by digest: a failing deep comparison of megabytes would
    // print them all.
    assertEquals(
      await digest(await gunzip(travelled)),
      await digest(plainBytes),
      path,
    );
    const refused = await svc.fetch(path, {
      headers: { "accept-encoding": "gzip;q=0" },
    });
    await refused.body?.cancel();
    assertEquals(refused.headers.get("content-encoding"), null, path);
    const again = await svc.fetch(path, {
      headers: { "if-none-match": zipped.headers.get("etag")! },
    });
    await again.body?.cancel();
    assertEquals(again.status, 304, path);
  }
  // The document shrinks the most: half a megabyte of JSON.
  const doc = await svc.fetch("/openapi.json", {
    headers: { "accept-encoding": "gzip" },
  });
  assert((await doc.arrayBuffer()).byteLength < 100_000);
});

const digest = async (
  bytes: Uint8Array<ArrayBuffer>,
) => [
  bytes.length,
  new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)),
];

const gunzip = async (bytes: Uint8Array<ArrayBuffer>) =>
  new Uint8Array(
    await new Response(
      new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")),
    ).arrayBuffer(),
  );
