import { assertEquals } from "./support/assert.ts";
import { startService } from "./support/service.ts";

const get = async (
  svc: { fetch(path: string): Promise<Response> },
  path: string,
) => {
  const res = await svc.fetch(path);
  return [res.status, await res.json()];
};

Deno.test("/health/live answers while the process serves; /health/ready and /health follow the database", async () => {
  await using svc = await startService();
  const ok = { status: "ok" };
  assertEquals(await get(svc, "/health/live"), [200, ok]);
  assertEquals(await get(svc, "/health/ready"), [200, ok]);
  assertEquals(await get(svc, "/health"), [200, ok]);

  // The pool closed: the database no longer answers this process.
  await svc.sql.end({ timeout: 1 });
  const down = { status: "unavailable" };
  assertEquals(await get(svc, "/health/ready"), [503, down]);
  assertEquals(await get(svc, "/health"), [503, down]);
  assertEquals(await get(svc, "/health/live"), [200, ok]);
});

Deno.test("the health endpoints need no session and are in the OpenAPI document", async () => {
  await using svc = await startService();
  const doc = await (await svc.fetch("/openapi.json")).json();
  for (const path of ["/health", "/health/live", "/health/ready"]) {
    const op = doc.paths[path]?.get;
    assertEquals(typeof op?.summary, "string", path);
    assertEquals(Object.keys(op.responses).includes("200"), true, path);
  }
  assertEquals(Object.keys(doc.paths["/health/ready"].get.responses), [
    "200",
    "503",
  ]);
  assertEquals(Object.keys(doc.paths["/health/live"].get.responses), ["200"]);
});
