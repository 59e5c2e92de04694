import { assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

Deno.test("GET / needs no session and points to /docs, /openapi.json and /health, each of which answers", async () => {
  const svc = await service();
  const home = await svc.client().get("/");
  assertEquals(home.ok && home.data, {
    docs: "/docs",
    openapi: "/openapi.json",
    health: "/health",
  });
  for (const path of ["/docs", "/openapi.json", "/health"]) {
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
