import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

Deno.test("GET / needs no session and points to /admin, /docs, /openapi.json and /health, each of which answers", async () => {
  const svc = await service();
  const home = await svc.client().get("/");
  assertEquals(home.ok && home.data, {
    console: "/admin",
    docs: "/docs",
    openapi: "/openapi.json",
    health: "/health",
  });
  for (const path of ["/admin", "/docs", "/openapi.json", "/health"]) {
    const res = await svc.fetch(path);
    await res.body?.cancel();
    assertEquals(res.status, 200, path);
  }
});

Deno.test("GET / is in the OpenAPI document; other methods on / answer 405 with Allow", async () => {
  const svc = await service();
  const doc = await (await svc.fetch("/openapi.json")).json();
  assertEquals(Object.keys(doc.paths["/"]?.get?.responses ?? {}), ["200"]);
  const post = await svc.fetch("/", { method: "POST" });
  assertEquals(
    [post.status, post.headers.get("allow"), await post.json()],
    [405, "GET, HEAD", { error: "Method not allowed" }],
  );
});

Deno.test("/favicon.ico answers the service's icon, which the console's page names too", async () => {
  const svc = await service();
  const icon = await svc.fetch("/favicon.ico");
  assertEquals(
    [icon.status, icon.headers.get("content-type")],
    [200, "image/svg+xml"],
  );
  const svg = await icon.text();
  assert(svg.startsWith("<svg "), svg);
  const page = await (await svc.fetch("/admin")).text();
  assert(
    page.includes('<link rel="icon" href="/admin/icon.svg"'),
    "the console's page names its icon",
  );
  const named = await svc.fetch("/admin/icon.svg");
  assertEquals([named.status, await named.text()], [200, svg]);
});
