import { parse } from "yaml";
import { assertEquals, assertMatch } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

const service = sharedService();

Deno.test("an unknown path answers 404 Not found as JSON", async () => {
  const svc = await service();
  for (
    const path of [
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
  assertEquals(served.components.securitySchemes.bearerAuth, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "uak_ API key",
    description: served.components.securitySchemes.bearerAuth.description,
  });
});

Deno.test("the document lists every status each operation answers, with the exact messages", async () => {
  const svc = await service();
  const doc = await (await svc.fetch("/openapi.json")).json();
  const messages = (path: string, method: string, status: number) =>
    doc.paths[path][method].responses[status].content["application/json"].schema
      .properties.error.enum;
  assertEquals(Object.keys(doc.paths).sort(), [
    "/",
    "/api/assignments",
    "/api/assignments/{id}",
    "/api/audit",
    "/api/audit/stream",
    "/api/auth/login",
    "/api/auth/login/second-factor",
    "/api/auth/login/second-factor/options",
    "/api/auth/logout",
    "/api/auth/me",
    "/api/auth/mfa",
    "/api/auth/mfa/passkeys",
    "/api/auth/mfa/passkeys/options",
    "/api/auth/mfa/passkeys/{id}",
    "/api/auth/mfa/recovery-codes",
    "/api/auth/mfa/totp",
    "/api/auth/mfa/totp/confirm",
    "/api/auth/password",
    "/api/auth/permissions",
    "/api/auth/sessions",
    "/api/auth/sessions/{sessionId}",
    "/api/auth/step-up",
    "/api/auth/step-up/options",
    "/api/groups",
    "/api/groups/{id}",
    "/api/groups/{id}/members",
    "/api/imports",
    "/api/imports/{id}",
    "/api/imports/{id}/cancel",
    "/api/imports/{id}/errors",
    "/api/overview",
    "/api/roles",
    "/api/roles/{id}",
    "/api/scim/connections",
    "/api/scim/connections/{id}",
    "/api/sso/providers",
    "/api/sso/providers/public",
    "/api/sso/providers/{id}",
    "/api/sso/{id}/callback",
    "/api/sso/{id}/start",
    "/api/users",
    "/api/users/count",
    "/api/users/export",
    "/api/users/{id}",
    "/api/users/{id}/disable",
    "/api/users/{id}/enable",
    "/api/users/{id}/keys",
    "/api/users/{id}/keys/{keyId}",
    "/api/users/{id}/mfa",
    "/api/users/{id}/sessions",
    "/api/users/{id}/sessions/{sessionId}",
    "/api/webhooks",
    "/api/webhooks/{id}",
    "/api/webhooks/{id}/deliveries",
    "/api/webhooks/{id}/enable",
    "/api/webhooks/{id}/retry",
    "/api/webhooks/{id}/test",
    "/health",
    "/health/live",
    "/health/ready",
    "/scim/v2/.search",
    "/scim/v2/Bulk",
    "/scim/v2/Groups",
    "/scim/v2/Groups/.search",
    "/scim/v2/Groups/{id}",
    "/scim/v2/ResourceTypes",
    "/scim/v2/ResourceTypes/{name}",
    "/scim/v2/Schemas",
    "/scim/v2/Schemas/{uri}",
    "/scim/v2/ServiceProviderConfig",
    "/scim/v2/Users",
    "/scim/v2/Users/.search",
    "/scim/v2/Users/{id}",
  ]);
  // The change feed: an event stream, and every refusal with its message.
  const feed = doc.paths["/api/audit/stream"].get;
  assertEquals(Object.keys(feed.responses).sort(), [
    "200",
    "400",
    "401",
    "403",
    "410",
    "429",
    "500",
  ]);
  assertEquals(Object.keys(feed.responses[200].content), [
    "text/event-stream",
  ]);
  assertEquals(messages("/api/audit/stream", "get", 400), [
    "Invalid query parameter: after",
    "Invalid query parameter: action",
    "Invalid Last-Event-ID",
  ]);
  assertEquals(messages("/api/audit/stream", "get", 410), [
    "Event history no longer available",
  ]);
  assertEquals(messages("/api/audit/stream", "get", 500), [
    "Failed to stream audit events",
  ]);
  assertEquals(messages("/api/webhooks", "post", 400), [
    "Invalid webhook",
    "Too many webhooks",
  ]);
  assertEquals(messages("/api/webhooks/{id}/enable", "post", 404), [
    "Webhook not found",
  ]);
  assertEquals(
    Object.keys(doc.paths["/api/webhooks/{id}/deliveries"].get.responses)
      .sort(),
    ["200", "400", "401", "403", "404", "500"],
  );
  assertEquals(Object.keys(doc.webhooks), ["auditRecord"]);
  assertEquals(Object.keys(doc.paths["/api/users"].post.responses).sort(), [
    "201",
    "400",
    "401",
    "403",
    "409",
    "413",
    "422",
    "500",
  ]);
  assertEquals(messages("/api/users", "post", 400), [
    "Invalid Idempotency-Key",
    "All fields are required",
    "Role must be admin or viewer",
    "Password must be at least 8 characters",
    "Username must be at most 64 characters without control characters",
    "Username contains characters that are not allowed",
    "Name must be at most 200 characters",
    "Name contains characters that are not allowed",
    "Email must be a valid address",
    "Password must be at most 72 bytes",
    "Password must not contain NUL characters",
    "Department must be at most 100 characters",
    "Invalid request body",
  ]);
  assertEquals(messages("/api/users", "post", 500), ["Failed to create user"]);
  assertEquals(messages("/api/users/{id}", "patch", 409), [
    "Username or email already exists",
  ]);
  assertEquals(messages("/api/users/{id}", "patch", 500), ["Update failed"]);
  assertEquals(messages("/api/users/{id}", "delete", 400), [
    "You cannot delete your own account",
  ]);
  assertEquals(messages("/api/users/{id}", "delete", 404), ["User not found"]);
  assertEquals(messages("/api/auth/login", "post", 401), [
    "Invalid username or password",
    "Use your identity provider to sign in",
    "Second factor required",
    "Invalid code",
  ]);
  assertEquals(messages("/api/sso/providers", "post", 400), [
    "Invalid identity provider",
  ]);
  assertEquals(messages("/api/sso/providers/{id}", "patch", 404), [
    "Identity provider not found",
  ]);
  assertEquals(messages("/api/sso/providers", "post", 500), [
    "Failed to create identity provider",
  ]);
  assertEquals(messages("/api/sso/providers", "get", 500), [
    "Failed to list identity providers",
  ]);
  assertEquals(messages("/api/sso/providers/{id}", "get", 500), [
    "Failed to get identity provider",
  ]);
  assertEquals(messages("/api/sso/providers/{id}", "patch", 500), [
    "Failed to update identity provider",
  ]);
  assertEquals(messages("/api/sso/providers/{id}", "delete", 500), [
    "Failed to delete identity provider",
  ]);
  assertEquals(messages("/api/sso/{id}/start", "get", 400), [
    "Invalid query parameter: returnTo",
  ]);
  assertEquals(messages("/api/sso/{id}/callback", "get", 404), [
    "Identity provider not found",
  ]);
  assertEquals(messages("/api/sso/{id}/callback", "get", 500), [
    "Sign-in failed",
  ]);
  assertEquals(
    Object.keys(doc.paths["/api/sso/{id}/callback"].get.responses).sort(),
    ["302", "404", "500"],
  );
  assertEquals(doc.paths["/api/sso/providers/public"].get.security, []);
  assertEquals(messages("/api/users", "get", 401), ["Unauthorised"]);
  assertEquals(messages("/api/users", "get", 403), [
    "Forbidden",
    "Second factor enrollment required",
  ]);
  // Delegated administration: roles and their assignments.
  assertEquals(messages("/api/roles", "post", 400), [
    "Invalid request body",
    "Unknown permission: <name>",
  ]);
  assertEquals(messages("/api/roles", "post", 403), [
    "Forbidden",
    "Second factor enrollment required",
    "Cannot grant more than you hold",
  ]);
  assertEquals(messages("/api/roles", "post", 409), [
    "Role name already exists",
  ]);
  assertEquals(messages("/api/roles/{id}", "patch", 412), [
    "Precondition failed",
  ]);
  assertEquals(messages("/api/roles/{id}", "delete", 404), [
    "Role not found",
  ]);
  assertEquals(messages("/api/assignments", "post", 400), [
    "Invalid assignment",
  ]);
  assertEquals(messages("/api/assignments", "post", 403), [
    "Forbidden",
    "Second factor enrollment required",
    "Cannot act on a more privileged user",
    "Cannot grant more than you hold",
  ]);
  assertEquals(messages("/api/assignments", "post", 404), [
    "User not found",
    "Group not found",
    "Role not found",
  ]);
  assertEquals(messages("/api/assignments", "post", 409), [
    "Assignment already exists",
  ]);
  assertEquals(messages("/api/assignments/{id}", "delete", 404), [
    "Assignment not found",
  ]);
  // Groups: the same groups SCIM pushes, read-only here when a connection owns them.
  assertEquals(messages("/api/groups", "post", 400), [
    "Invalid request body",
  ]);
  assertEquals(messages("/api/groups/{id}", "patch", 409), [
    "Group is managed by its identity provider: change it there",
  ]);
  assertEquals(messages("/api/groups/{id}", "delete", 404), [
    "Group not found",
  ]);
  for (const method of ["put", "post", "delete"] as const) {
    assertEquals(messages("/api/groups/{id}/members", method, 403), [
      "Forbidden",
      "Second factor enrollment required",
      "Cannot act on a more privileged user",
      "Cannot grant more than you hold",
    ]);
    assertEquals(messages("/api/groups/{id}/members", method, 404), [
      "Group not found",
      "User not found",
    ]);
    assertEquals(messages("/api/groups/{id}/members", method, 409), [
      "Group is managed by its identity provider: change it there",
    ]);
  }
  assertEquals(messages("/api/groups", "get", 500), [
    "Failed to list groups",
  ]);
  assertEquals(messages("/api/groups/{id}/members", "put", 500), [
    "Failed to change group members",
  ]);
  assertEquals(messages("/api/users/{id}/keys", "post", 400), [
    "Invalid API key request",
    "Unknown permission: <name>",
    "Group not found",
    "Too many API keys",
  ]);
  assertEquals(messages("/api/auth/permissions", "get", 500), [
    "Failed to read permissions",
  ]);
  for (
    const [path, item] of Object.entries<
      Record<string, { security?: unknown }>
    >(doc.paths)
  ) {
    if (
      !/^\/api\/(users|audit|webhooks|roles|assignments|groups)/.test(path)
    ) {
      continue;
    }
    for (const op of Object.values(item)) {
      assertEquals(op.security, [{ cookieAuth: [] }, { bearerAuth: [] }]);
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
