import { parse } from "yaml";
import { assertEquals, assertMatch } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService();

Deno.test("an unknown path answers 404 Not found as JSON", async () => {
  const svc = await service();
  for (
    const path of [
      "/",
      "/api",
      "/api/users/",
      "/api/users/1/2",
      "/api/userz",
      "/nope",
    ]
  ) {
    const res = await svc.adminFetch(path);
    assertEquals(
      [res.status, await res.json()],
      [404, { error: "Not found" }],
      path,
    );
    assertMatch(res.headers.get("content-type")!, /^application\/json/);
  }
});

Deno.test("a known path with another method answers 405 Method not allowed with Allow", async () => {
  const svc = await service();
  const cases: [string, string, string][] = [
    ["PUT", "/api/users", "GET, HEAD, POST"],
    ["DELETE", "/api/users", "GET, HEAD, POST"],
    ["POST", "/api/users/1", "GET, HEAD, PATCH, DELETE"],
    ["PUT", "/api/users/abc", "GET, HEAD, PATCH, DELETE"],
    ["GET", "/api/auth/login", "POST"],
    ["POST", "/health", "GET, HEAD"],
  ];
  for (const [method, path, allow] of cases) {
    const res = await svc.fetch(path, { method });
    assertEquals([res.status, await res.json()], [405, {
      error: "Method not allowed",
    }], `${method} ${path}`);
    assertEquals(
      res.headers.get("allow")!.split(", ").sort(),
      allow.split(", ").sort(),
    );
  }
});

Deno.test("health answers ok while the database answers", async () => {
  const svc = await service();
  const res = await svc.fetch("/health");
  assertEquals([res.status, await res.json()], [200, { status: "ok" }]);
});

Deno.test("/openapi.json serves the document that openapi/openapi.yaml holds", async () => {
  const svc = await service();
  const served = await (await svc.fetch("/openapi.json")).json();
  const committed = parse(
    await Deno.readTextFile(
      new URL("../openapi/openapi.yaml", import.meta.url),
    ),
  );
  assertEquals(served, committed);
  assertEquals(served.openapi, "3.1.0");
  assertEquals(served.components.securitySchemes.cookieAuth, {
    type: "apiKey",
    in: "cookie",
    name: "sid",
    description: served.components.securitySchemes.cookieAuth.description,
  });
});

Deno.test("the document lists every status each operation answers, with the exact messages", async () => {
  const svc = await service();
  const doc = await (await svc.fetch("/openapi.json")).json();
  const messages = (path: string, method: string, status: number) =>
    doc.paths[path][method].responses[status].content["application/json"].schema
      .properties.error.enum;
  assertEquals(Object.keys(doc.paths).sort(), [
    "/api/audit",
    "/api/auth/login",
    "/api/auth/logout",
    "/api/auth/me",
    "/api/users",
    "/api/users/{id}",
    "/api/users/{id}/disable",
    "/api/users/{id}/enable",
    "/api/users/{id}/sessions",
    "/api/users/{id}/sessions/{sessionId}",
    "/health",
    "/health/live",
    "/health/ready",
  ]);
  assertEquals(Object.keys(doc.paths["/api/users"].post.responses).sort(), [
    "201",
    "400",
    "401",
    "403",
    "409",
    "413",
    "500",
  ]);
  assertEquals(messages("/api/users", "post", 400), [
    "All fields are required",
    "Role must be admin or viewer",
    "Password must be at least 8 characters",
    "Username must be at most 64 characters without control characters",
    "Username contains characters that are not allowed",
    "Name must be at most 200 characters",
    "Email must be a valid address",
    "Password must be at most 72 bytes",
    "Password must not contain NUL characters",
    "Invalid request body",
  ]);
  assertEquals(messages("/api/users", "post", 500), ["Failed to create user"]);
  assertEquals(messages("/api/users/{id}", "patch", 500), ["Update failed"]);
  assertEquals(messages("/api/users/{id}", "delete", 400), [
    "You cannot delete your own account",
  ]);
  assertEquals(messages("/api/users/{id}", "delete", 404), ["User not found"]);
  assertEquals(messages("/api/users", "get", 401), ["Unauthorised"]);
  assertEquals(messages("/api/users", "get", 403), ["Forbidden"]);
  for (
    const [path, item] of Object.entries<
      Record<string, { security?: unknown }>
    >(doc.paths)
  ) {
    if (!/^\/api\/(users|audit)/.test(path)) continue;
    for (const op of Object.values(item)) {
      assertEquals(op.security, [{ cookieAuth: [] }]);
    }
  }
});

Deno.test("the app also answers in-process through app.request, without a listening server", async () => {
  const svc = await service();
  const res = await svc.app.request("/api/users/abc", { method: "DELETE" });
  assertEquals([res.status, await res.json()], [401, {
    error: "Unauthorised",
  }]);
});
