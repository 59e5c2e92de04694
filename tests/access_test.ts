import { parse } from "yaml";
import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  newUser,
  sharedService,
  startService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/**
 * Every admin-only call (all of /api except /api/auth), with a valid body and
 * with bodies that would fail their own checks. A test below keeps the list
 * whole against the document.
 */
const CALLS: [method: string, path: string, body?: string][] = [
  ["GET", "/api/users"],
  ["GET", "/api/users/1"],
  ["GET", "/api/users/abc"],
  [
    "POST",
    "/api/users",
    JSON.stringify({
      username: "n",
      name: "n",
      email: "n@x.io",
      password: "password1",
      role: "viewer",
    }),
  ],
  ["POST", "/api/users", "not json"],
  ["POST", "/api/users", "{}"],
  [
    "POST",
    "/api/users",
    JSON.stringify({
      username: "admin",
      name: "n",
      email: "n@x.io",
      password: "password1",
      role: "viewer",
    }),
  ],
  ["PATCH", "/api/users/1", JSON.stringify({ role: "viewer" })],
  ["PATCH", "/api/users/1", JSON.stringify({ role: "root" })],
  ["PATCH", "/api/users/1", "not json"],
  ["PATCH", "/api/users/abc", JSON.stringify({ password: "short" })],
  ["DELETE", "/api/users/1"],
  ["DELETE", "/api/users/424242"],
  ["DELETE", "/api/users/abc"],
  ["POST", "/api/users", "x".repeat(70_000)],
  ["POST", "/api/users/1/disable", JSON.stringify({ reason: "r" })],
  ["POST", "/api/users/1/disable"],
  ["POST", "/api/users/abc/disable", "not json"],
  ["POST", "/api/users/1/enable"],
  ["GET", "/api/users/1/sessions"],
  ["GET", "/api/users/abc/sessions"],
  ["DELETE", "/api/users/1/sessions"],
  ["DELETE", "/api/users/1/sessions/abc"],
  ["DELETE", "/api/users/1/mfa"],
  ["GET", "/api/users/1/keys"],
  ["POST", "/api/users/1/keys", JSON.stringify({ name: "ci" })],
  ["POST", "/api/users/1/keys", "not json"],
  ["DELETE", "/api/users/1/keys/1"],
  ["GET", "/api/audit"],
  ["GET", "/api/audit?limit=0"],
  ["GET", "/api/audit/stream"],
  ["GET", "/api/webhooks"],
  [
    "POST",
    "/api/webhooks",
    JSON.stringify({ url: "https://hooks.example/in" }),
  ],
  ["POST", "/api/webhooks", "{}"],
  ["GET", "/api/webhooks/1"],
  ["DELETE", "/api/webhooks/1"],
  ["GET", "/api/webhooks/1/deliveries"],
  ["POST", "/api/webhooks/1/enable"],
  ["POST", "/api/webhooks/1/test"],
  ["POST", "/api/webhooks/abc/test"],
  ["POST", "/api/webhooks/1/retry"],
  ["GET", "/api/users/export"],
  ["GET", "/api/users/count"],
  ["POST", "/api/imports", '{"username":"n","name":"n","email":"n@x.io"}'],
  ["GET", "/api/imports/1"],
  ["POST", "/api/imports/1/cancel"],
  ["GET", "/api/imports/1/errors"],
  ["GET", "/api/scim/connections"],
  ["POST", "/api/scim/connections", JSON.stringify({ name: "Okta" })],
  ["POST", "/api/scim/connections", "{}"],
  ["GET", "/api/scim/connections/1"],
  ["PATCH", "/api/scim/connections/1", JSON.stringify({ name: "Entra" })],
  ["DELETE", "/api/scim/connections/1"],
  ["GET", "/api/sso/providers"],
  [
    "POST",
    "/api/sso/providers",
    JSON.stringify({
      name: "Okta",
      issuer: "https://example.okta.com",
      clientId: "c",
      clientSecret: "s",
    }),
  ],
  ["POST", "/api/sso/providers", "{}"],
  ["GET", "/api/sso/providers/1"],
  ["PATCH", "/api/sso/providers/1", JSON.stringify({ name: "Entra" })],
  ["DELETE", "/api/sso/providers/1"],
  ["GET", "/api/overview"],
  ["GET", "/api/roles"],
  ["POST", "/api/roles", JSON.stringify({ name: "desk", permissions: [] })],
  ["POST", "/api/roles", "not json"],
  ["GET", "/api/roles/1"],
  ["PATCH", "/api/roles/1", JSON.stringify({ permissions: ["users:fly"] })],
  ["DELETE", "/api/roles/abc"],
  ["GET", "/api/assignments"],
  ["GET", "/api/assignments?userId=abc"],
  ["POST", "/api/assignments", JSON.stringify({ roleId: 1, userId: 1 })],
  ["DELETE", "/api/assignments/1"],
  ["POST", "/api/assignments", JSON.stringify({ roleId: 1, groupId: 1 })],
  ["GET", "/api/groups"],
  ["POST", "/api/groups", JSON.stringify({ displayName: "Desk" })],
  ["GET", "/api/groups/1"],
  ["PATCH", "/api/groups/1", JSON.stringify({ displayName: "Desk" })],
  ["DELETE", "/api/groups/abc"],
  ["PUT", "/api/groups/1/members", JSON.stringify({ userIds: [1] })],
  ["POST", "/api/groups/1/members", JSON.stringify({ userIds: [1] })],
  ["DELETE", "/api/groups/1/members", "not json"],
];

/**
 * The document's operations (HEAD twins aside) under /api, but for /api/auth
 * and those anyone may call (`security: []`: the sign-in through an
 * identity provider and its list of providers).
 */
async function adminOperations(): Promise<[method: string, path: string][]> {
  const doc = parse(
    await Deno.readTextFile(
      new URL("../openapi/openapi.yaml", import.meta.url),
    ),
  ) as {
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  };
  return Object.entries(doc.paths)
    .filter(([path]) =>
      path.startsWith("/api/") && !path.startsWith("/api/auth/")
    )
    .flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([m, op]) =>
          ["get", "post", "put", "patch", "delete"].includes(m) &&
          op.security?.length !== 0
        )
        .map(([m]): [string, string] => [m.toUpperCase(), path])
    );
}

Deno.test("the calls below cover every admin-only operation of the document", async () => {
  const operations = await adminOperations();
  assert(operations.length >= 20, `only ${operations.length} operations`);
  for (const [method, path] of operations) {
    const pattern = new RegExp(
      `^${path.replace(/\{[^}]+\}/g, "[^/?]+")}(\\?.*)?$`,
    );
    assert(
      CALLS.some(([m, p]) => m === method && pattern.test(p)),
      `${method} ${path} is not among the calls`,
    );
  }
});

async function call(
  svc: TestService,
  cookie: string | undefined,
  [method, path, body]: typeof CALLS[number],
  headers: Record<string, string> = {},
) {
  const res = await svc.fetch(path, {
    method,
    body,
    headers: cookie ? { cookie, ...headers } : headers,
  });
  return [res.status, await res.json()];
}

async function snapshot(svc: TestService) {
  return await svc
    .sql`select id, username, role, password_hash from users order by id`;
}

Deno.test("without a session every admin call answers 401 Unauthorised before any other check", async () => {
  const svc = await service();
  const before = await snapshot(svc);
  for (const c of CALLS) {
    for (const cookie of [undefined, "sid=" + "Z".repeat(43), "sid=junk"]) {
      assertEquals(
        await call(svc, cookie, c),
        [401, { error: "Unauthorised" }],
        `${c[0]} ${c[1]} ${c[2]?.slice(0, 20)}`,
      );
    }
  }
  assertEquals(await snapshot(svc), before);
});

Deno.test("a viewer gets 403 Forbidden on every admin call, before any other check", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const cookie = await loginCookie(svc, {
    username: account.username,
    password,
  });
  const before = await snapshot(svc);
  for (const c of CALLS) {
    assertEquals(
      await call(svc, cookie, c),
      [403, { error: "Forbidden" }],
      `${c[0]} ${c[1]} ${c[2]?.slice(0, 20)}`,
    );
  }
  // Its own id too: 403 comes before "You cannot delete your own account".
  assertEquals(
    await call(svc, cookie, ["DELETE", `/api/users/${account.id}`]),
    [403, { error: "Forbidden" }],
  );
  assertEquals(await snapshot(svc), before);
});

Deno.test("me answers 401 without a session, and any role sees itself", async () => {
  const svc = await service();
  assertEquals((await svc.client().me()).status, 401);
  const { client, account } = await svc.userClient("viewer");
  assertEquals(await client.me(), { ok: true, status: 200, data: account });
});

Deno.test("a POST, PATCH or DELETE from a foreign Origin answers 403 after authentication", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const evil = { origin: "https://evil.example" };
  const create = JSON.stringify(newUser("o1"));
  const unsafe: typeof CALLS = [
    ["POST", "/api/users", create],
    ["PATCH", `/api/users/${account.id}`, JSON.stringify({ role: "admin" })],
    ["DELETE", `/api/users/${account.id}`],
  ];
  const cookie = await loginCookie(svc);
  const before = await snapshot(svc);
  for (const c of unsafe) {
    assertEquals(await call(svc, cookie, c, evil), [403, {
      error: "Forbidden",
    }], c[0]);
    assertEquals(await call(svc, undefined, c, evil), [401, {
      error: "Unauthorised",
    }], c[0]);
  }
  assertEquals(await snapshot(svc), before);
  // Reading is not state-changing: a foreign Origin may read (no CORS lets a page see it, though).
  const list = await svc.fetch("/api/users", { headers: { cookie, ...evil } });
  assertEquals(list.status, 200);
  assertEquals(list.headers.get("access-control-allow-origin"), null);
  await list.body?.cancel();
  // Logging in from a foreign page is refused too.
  const login = await svc.fetch("/api/auth/login", {
    method: "POST",
    headers: evil,
    body: JSON.stringify({ username: "admin", password: "admin-pass-1234" }),
  });
  assertEquals([login.status, await login.json()], [403, {
    error: "Forbidden",
  }]);
});

Deno.test("the service's own origin, an allowed origin, and no Origin at all pass", async () => {
  await using svc = await startService({
    ALLOWED_ORIGINS: "https://admin.example, http://localhost:3000",
  });
  const cookie = await loginCookie(svc);
  const origins = [
    svc.baseUrl,
    "https://admin.example",
    "http://localhost:3000",
    undefined,
  ];
  for (const [i, origin] of origins.entries()) {
    const body = JSON.stringify(newUser(`ok${i}`));
    const res = await svc.fetch("/api/users", {
      method: "POST",
      body,
      headers: origin ? { cookie, origin } : { cookie },
    });
    assertEquals(res.status, 201, String(origin));
    await res.body?.cancel();
  }
  const other = await svc.fetch("/api/users/2", {
    method: "DELETE",
    headers: { cookie, origin: "https://admin.example.evil" },
  });
  assertEquals(other.status, 403);
  await other.body?.cancel();
});

Deno.test("behind a trusted proxy the own origin is the one the proxy reports", async () => {
  await using svc = await startService({ TRUST_PROXY: "true" });
  const cookie = await loginCookie(svc);
  const body = JSON.stringify(newUser("p1"));
  const headers = {
    cookie,
    origin: "https://users.example",
    "x-forwarded-proto": "https",
    "x-forwarded-host": "users.example",
  };
  const res = await svc.fetch("/api/users", { method: "POST", body, headers });
  assertEquals(res.status, 201);
  await res.body?.cancel();
});
