/**
 * Values PostgreSQL cannot hold: NUL (U+0000) in any text of a body or a
 * query, and a time outside the years 0001..9999 once its offset is
 * applied. Each answers 400 with its endpoint's bad-body or bad-parameter
 * message, never 500, and nothing is written.
 */
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({ WEBHOOK_ALLOW_PRIVATE: "true" }, {
  bcryptCost: 4,
});

const NUL = "a\u0000b";
/** Times past 9999-12-31T23:59:59.999Z once in UTC (and before year 1). */
const OUT_OF_RANGE = [
  "+010000-01-01T00:00:00Z",
  "9999-12-31T23:30:00-01:00",
  "0001-01-01T00:30:00+01:00",
  "-000001-01-01T00:00:00Z",
];

/** A raw JSON request as the admin; answers status and parsed body. */
async function send(
  svc: TestService,
  method: string,
  path: string,
  body?: unknown,
) {
  const res = await svc.adminFetch(path, {
    method,
    ...body !== undefined && { body: JSON.stringify(body) },
  });
  return { status: res.status, body: await res.json() };
}

const viewer = async (svc: TestService) =>
  (await svc.userClient("viewer"))
    .account.id;

Deno.test("an API key whose name holds NUL or a lone surrogate answers 400 Invalid API key request, and no key is made", async () => {
  const svc = await service();
  const id = await viewer(svc);
  // A lone surrogate: the audit record's jsonb details cannot hold it.
  for (const name of [NUL, "key\ud800"]) {
    const answer = await svc.admin.POST("/api/users/{id}/keys", {
      params: { path: { id } },
      body: { name },
    });
    assertEquals(answer.response.status, 400, JSON.stringify(name));
    assertEquals(answer.error, { error: "Invalid API key request" });
  }
  const [{ count }] = await svc.sql`select count(*)::int from api_keys`;
  assertEquals(count, 0);
});

Deno.test("an API key whose expiresAt lies outside the years 0001..9999 answers 400 Invalid API key request", async () => {
  const svc = await service();
  const id = await viewer(svc);
  for (const expiresAt of OUT_OF_RANGE) {
    const answer = await svc.admin.POST("/api/users/{id}/keys", {
      params: { path: { id } },
      body: { name: "service", expiresAt },
    });
    assertEquals(answer.response.status, 400, expiresAt);
    assertEquals(answer.error, { error: "Invalid API key request" });
  }
});

Deno.test("a webhook whose description or URL holds NUL answers 400 Invalid webhook, and none is made", async () => {
  const svc = await service();
  for (
    const body of [
      { url: "http://127.0.0.1:9/hook", description: NUL },
      { url: "http://127.0.0.1:9/ho\u0000ok" },
      { url: "http://127.0.0.1:9/hook?q=\u0000" },
    ]
  ) {
    const answer = await svc.admin.POST("/api/webhooks", { body });
    assertEquals(answer.response.status, 400, JSON.stringify(body));
    assertEquals(answer.error, { error: "Invalid webhook" });
  }
  const [{ count }] = await svc
    .sql`select count(*)::int from webhook_endpoints`;
  assertEquals(count, 0);
});

Deno.test("a disable whose until lies past the year 9999 once in UTC, or whose reason holds NUL, answers 400 Invalid request body", async () => {
  const svc = await service();
  const id = await viewer(svc);
  const bodies: unknown[] = [
    ...OUT_OF_RANGE.slice(0, 2).map((until) => ({ until })),
    { reason: NUL },
  ];
  for (const body of bodies) {
    const answer = await svc.admin.POST("/api/users/{id}/disable", {
      params: { path: { id } },
      body: body as { until: string },
    });
    assertEquals(answer.response.status, 400, JSON.stringify(body));
    assertEquals(answer.error, { error: "Invalid request body" });
  }
  const user = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id } },
  });
  assertEquals(user.data?.disabled, null);
});

Deno.test("a new user with NUL in a field answers that field's own 400", async () => {
  const svc = await service();
  const valid = {
    username: "nul-user",
    name: "Nul User",
    email: "nul@example.com",
    password: "password-1234",
    role: "viewer",
  };
  const cases: [Partial<typeof valid>, string][] = [
    [
      { username: NUL },
      "Username must be at most 64 characters without control characters",
    ],
    [{ name: NUL }, "Name contains characters that are not allowed"],
    [{ email: "a\u0000@example.com" }, "Email must be a valid address"],
    [
      { password: "password\u00001234" },
      "Password must not contain NUL characters",
    ],
    [{ role: "viewer\u0000" }, "Role must be admin or viewer"],
  ];
  for (const [change, message] of cases) {
    const answer = await send(svc, "POST", "/api/users", {
      ...valid,
      ...change,
    });
    assertEquals(answer, { status: 400, body: { error: message } });
  }
});

Deno.test("a user's change with NUL in the role or password answers that field's own 400", async () => {
  const svc = await service();
  const id = await viewer(svc);
  assertEquals(
    await send(svc, "PATCH", `/api/users/${id}`, { role: "admin\u0000" }),
    { status: 400, body: { error: "Invalid role" } },
  );
  assertEquals(
    await send(svc, "PATCH", `/api/users/${id}`, {
      password: "password\u00001234",
    }),
    {
      status: 400,
      body: { error: "Password must not contain NUL characters" },
    },
  );
});

Deno.test("a login whose username holds NUL answers 401 like any unknown name, never 500", async () => {
  const svc = await service();
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: NUL, password: "password-1234" }),
  });
  assertEquals(res.status, 401);
  assertEquals(await res.json(), { error: "Invalid username or password" });
});

Deno.test("a query parameter that holds NUL or a time outside the years 0001..9999 answers 400 naming it", async () => {
  const svc = await service();
  const cases: [string, string][] = [
    ["/api/audit?since=%2B010000-01-01T00:00:00Z", "since"],
    ["/api/audit?until=9999-12-31T23:30:00-01:00", "until"],
    ["/api/audit?action=user.created%00", "action"],
    ["/api/users?q=a%00b", "q"],
    ["/api/users?username=a%00b", "username"],
    ["/api/users?email=a%00b", "email"],
    ["/api/users?after=a%00b", "after"],
    ["/api/webhooks/1/deliveries?limit=1%00", "limit"],
  ];
  for (const [path, name] of cases) {
    assertEquals(await send(svc, "GET", path), {
      status: 400,
      body: { error: `Invalid query parameter: ${name}` },
    }, path);
  }
});
