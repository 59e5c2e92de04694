import {
  assert,
  assertEquals,
  assertMatch,
  assertNotEquals,
} from "./support/assert.ts";
import { startHousekeeping } from "../src/housekeeping.ts";
import { createLogger } from "../src/log.ts";
import { ADMIN, sharedService, sidOf } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const json = (body: unknown): RequestInit => ({
  method: "POST",
  body: typeof body === "string" ? body : JSON.stringify(body),
  headers: { "content-type": "application/json" },
});

Deno.test("login answers the account and sets an HttpOnly SameSite=Strict session cookie", async () => {
  const svc = await service();
  const res = await svc.fetch("/api/auth/login", json(ADMIN));
  assertEquals(res.status, 200);
  const body = await res.json();
  assertEquals(Object.keys(body).sort(), [
    "email",
    "id",
    "name",
    "role",
    "username",
  ]);
  assertEquals(body.username, "admin");
  assertEquals(body.role, "admin");
  const [sid, did, ...more] = res.headers.getSetCookie();
  assertMatch(
    sid,
    /^sid=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Strict$/,
  );
  // The known-device cookie: 180 days, sent back to the login alone.
  assertMatch(
    did,
    /^did=[A-Za-z0-9_.-]+; Max-Age=15552000; Path=\/api\/auth\/login; HttpOnly; SameSite=Strict$/,
  );
  assertEquals(more, []);
});

Deno.test("the database keeps only the SHA-256 of the session token", async () => {
  const svc = await service();
  const res = await svc.fetch("/api/auth/login", json(ADMIN));
  const token = sidOf(res)!;
  const digest = await sha256(token);
  const rows = await svc.sql<
    { token_hash: Uint8Array }[]
  >`select token_hash from sessions`;
  assert(rows.some((r) => equalBytes(r.token_hash, digest)));
  const raw = await svc.sql`select * from sessions`;
  assert(!JSON.stringify(raw).includes(token));
});

Deno.test("the cookie is Secure when COOKIE_SECURE=true, or behind a trusted proxy that says https", async () => {
  const svc = await service();
  {
    const secure = svc.configured({ COOKIE_SECURE: "true" });
    const res = await secure.fetch("/api/auth/login", json(ADMIN));
    // Both: the session's and the known device's.
    const cookies = res.headers.getSetCookie();
    assertEquals(cookies.length, 2);
    for (const cookie of cookies) assertMatch(cookie, /; Secure/);
  }
  {
    const proxied = svc.configured({ TRUST_PROXY: "true" });
    const init = json(ADMIN);
    init.headers = { ...init.headers, "x-forwarded-proto": "https" };
    const res = await proxied.fetch("/api/auth/login", init);
    const cookies = res.headers.getSetCookie();
    assertEquals(cookies.length, 2);
    for (const cookie of cookies) assertMatch(cookie, /; Secure/);
    assertMatch(
      res.headers.get("strict-transport-security")!,
      /max-age=31536000/,
    );
  }
  {
    const init = json(ADMIN);
    init.headers = { ...init.headers, "x-forwarded-proto": "https" };
    const res = await svc.fetch("/api/auth/login", init);
    assert(
      !res.headers.get("set-cookie")!.includes("Secure"),
      "X-Forwarded-Proto is not trusted by default",
    );
  }
});

Deno.test("login answers 400 when username or password is missing, empty or not a string", async () => {
  const svc = await service();
  const bodies: unknown[] = [
    {},
    { username: "admin" },
    { password: ADMIN.password },
    { username: "", password: ADMIN.password },
    { username: "   ", password: ADMIN.password },
    { username: "admin", password: "" },
    { username: 5, password: ADMIN.password },
    { username: "admin", password: 12345678 },
    { username: null, password: null },
    [ADMIN],
    "null",
    "not json",
    "",
  ];
  for (const body of bodies) {
    const res = await svc.fetch("/api/auth/login", json(body));
    assertEquals(res.status, 400, JSON.stringify(body));
    assertEquals(await res.json(), {
      error: "Username and password are required",
    });
  }
});

Deno.test("login answers the same 401 for an unknown user and for a wrong password", async () => {
  const svc = await service();
  const unknown = await svc.client().login("nobody", "whatever-password");
  const wrong = await svc.client().login("admin", "wrong-password");
  assertEquals(unknown, {
    ok: false,
    status: 401,
    error: "Invalid username or password",
  });
  assertEquals(wrong, unknown);
});

Deno.test("login accepts the username in any case and with surrounding whitespace", async () => {
  const svc = await service();
  const res = await svc.client().login("  ADMIN ", ADMIN.password);
  assert(res.ok);
  assertEquals(res.data.username, "admin");
});

Deno.test("each login makes a new token, and a cookie the client already sends is never adopted", async () => {
  const svc = await service();
  const planted = "A".repeat(43);
  const first = await svc.fetch("/api/auth/login", {
    ...json(ADMIN),
    headers: { cookie: `sid=${planted}` },
  });
  const second = await svc.fetch("/api/auth/login", json(ADMIN));
  const a = sidOf(first)!, b = sidOf(second)!;
  assertNotEquals(a, planted);
  assertNotEquals(a, b);
  const me = await svc.fetch("/api/auth/me", {
    headers: { cookie: `sid=${planted}` },
  });
  assertEquals(me.status, 401);
  for (const token of [a, b]) {
    const res = await svc.fetch("/api/auth/me", {
      headers: { cookie: `sid=${token}` },
    });
    assertEquals(res.status, 200);
  }
});

Deno.test("me answers the caller's account", async () => {
  const svc = await service();
  const me = await svc.admin.me();
  assertEquals(me, { ok: true, status: 200, data: svc.adminAccount });
});

Deno.test("me answers 401 for a missing, unknown, malformed or expired cookie", async () => {
  const svc = await service();
  const cookies = [
    undefined,
    "sid=",
    "sid=" + "B".repeat(43),
    "sid=short",
    "sid=" + "x".repeat(5000),
    "sid=%00%ff",
    "other=1",
    "garbage;;;==",
  ];
  for (const cookie of cookies) {
    const res = await svc.fetch("/api/auth/me", {
      headers: cookie ? { cookie } : {},
    });
    assertEquals(res.status, 401, String(cookie));
    assertEquals(await res.json(), { error: "Unauthorised" });
  }
  await svc.sql`update sessions set expires_at = now() - interval '1 second'`;
  const expired = await svc.admin.me();
  assertEquals(expired, { ok: false, status: 401, error: "Unauthorised" });
});

Deno.test("me finds the sid cookie among others, quoted or spaced, and in no other cookie's name", async () => {
  const svc = await service();
  const login = await svc.fetch("/api/auth/login", json(ADMIN));
  assertEquals(login.status, 200);
  await login.body?.cancel();
  const token = sidOf(login)!;
  const me = (cookie: string) =>
    svc.fetch("/api/auth/me", { headers: { cookie } });
  for (
    const cookie of [
      `sid=${token}`,
      `theme=dark; sid=${token}`,
      `sid=${token}; theme=dark`,
      `a=1;sid=${token};b=2`,
      `sid="${token}"`,
      `theme=dark;  sid = ${token} ;x=1`,
    ]
  ) {
    const res = await me(cookie);
    assertEquals(res.status, 200, cookie);
    assertEquals((await res.json()).username, ADMIN.username);
  }
  for (
    const cookie of [
      `xsid=${token}`,
      `sidx=${token}`,
      `sid=${token}x`,
      `sid="${token}`,
      `sid=${token}"`,
      `sid=${token.slice(1)}`,
      `theme=sid=${token}`,
    ]
  ) {
    const res = await me(cookie);
    assertEquals(res.status, 401, cookie);
    assertEquals(await res.json(), { error: "Unauthorised" });
  }
});

Deno.test("a session lasts SESSION_TTL_SECONDS, stored as an absolute expiry", async () => {
  const svc = await service();
  const shortLived = svc.configured({ SESSION_TTL_SECONDS: "600" });
  const res = await shortLived.fetch("/api/auth/login", json(ADMIN));
  assertMatch(res.headers.get("set-cookie")!, /Max-Age=600;/);
  const digest = await sha256(sidOf(res)!);
  const rows = await svc.sql<{ token_hash: Uint8Array; seconds: number }[]>`
    select token_hash, extract(epoch from expires_at - now())::int as seconds
    from sessions`;
  const row = rows.find((r) => equalBytes(r.token_hash, digest))!;
  assert(row.seconds > 590 && row.seconds <= 600, String(row.seconds));
});

Deno.test("logout ends the session on the server and clears the cookie", async () => {
  const svc = await service();
  const login = await svc.fetch("/api/auth/login", json(ADMIN));
  const cookie = `sid=${sidOf(login)}`;
  const out = await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { cookie },
  });
  assertEquals(out.status, 200);
  assertEquals(await out.json(), { ok: true });
  assertMatch(
    out.headers.get("set-cookie")!,
    /^sid=; Max-Age=0; Path=\/; HttpOnly; SameSite=Strict/,
  );
  // The old cookie, replayed, no longer works: the session is gone server-side.
  const replay = await svc.fetch("/api/auth/me", { headers: { cookie } });
  assertEquals(replay.status, 401);
});

Deno.test("logout without a session answers 200", async () => {
  const svc = await service();
  const res = await svc.client().logout();
  assertEquals(res, { ok: true, status: 200, data: { ok: true } });
});

Deno.test("any role may log in, and a viewer gets 403 on every /api/users endpoint", async () => {
  const svc = await service();
  const { client: viewer, account } = await svc.userClient("viewer");
  assertEquals((await viewer.me()).ok, true);
  const calls = [
    viewer.GET("/api/users"),
    viewer.GET("/api/users/{id}", { params: { path: { id: account.id } } }),
    viewer.POST("/api/users", {
      body: {
        username: "x1",
        name: "X",
        email: "x1@example.com",
        password: "password1",
        role: "viewer",
      },
    }),
    viewer.PATCH("/api/users/{id}", {
      params: { path: { id: account.id } },
      body: { role: "admin" },
    }),
    viewer.DELETE("/api/users/{id}", {
      params: { path: { id: svc.adminAccount.id } },
    }),
  ];
  for (const answer of await Promise.all(calls)) {
    assertEquals(answer.response.status, 403);
    assertEquals(answer.error, { error: "Forbidden" });
  }
  assertEquals((await svc.admin.GET("/api/users")).data!.length, 2);
});

Deno.test("a role change takes effect on that user's very next request", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  assertEquals((await client.GET("/api/users")).response.status, 403);
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "admin" },
  });
  assertEquals((await client.GET("/api/users")).response.status, 200);
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "viewer" },
  });
  assertEquals((await client.GET("/api/users")).response.status, 403);
});

Deno.test("a password reset ends all of that user's sessions but the caller's own", async () => {
  const svc = await service();
  const { client: first, account, password } = await svc.userClient("admin");
  const second = svc.client();
  assert((await second.login(account.username, password)).ok);

  // The user resets their own password through `first`: `first` stays, `second` ends.
  const reset = await first.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "brand-new-password" },
  });
  assertEquals(reset.response.status, 200);
  assertEquals((await first.me()).status, 200);
  assertEquals((await second.me()).status, 401);
  assertEquals(
    (await svc.client().login(account.username, password)).status,
    401,
  );
  assertEquals(
    (await svc.client().login(account.username, "brand-new-password")).status,
    200,
  );

  // Another admin resets it: every session of the user ends; the admin's stays.
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "another-password" },
  });
  assertEquals((await first.me()).status, 401);
  assertEquals((await svc.admin.me()).status, 200);
});

Deno.test("a role change alone ends no session", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  const changed = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "admin" },
  });
  assertEquals(changed.response.status, 200);
  assertEquals((await client.me()).status, 200);
});

Deno.test("deleting a user ends their sessions", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("admin");
  assertEquals((await client.me()).status, 200);
  await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals((await client.me()).status, 401);
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from sessions where user_id = ${account.id}`;
  assertEquals(n, 0);
});

const sha256 = async (text: string) =>
  new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );

function equalBytes(a: Uint8Array, b: Uint8Array) {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

Deno.test("housekeeping deletes expired sessions and ended login-failure windows, and nothing else", async () => {
  const svc = await service();
  const { client } = await svc.userClient("viewer");
  await svc.client().login("ghost", "wrong-password");
  await svc.client().login("admin", "wrong-password");
  await svc.sql`update sessions set expires_at = now() - interval '1 second'
    where user_id <> ${svc.adminAccount.id}`;
  await svc
    .sql`update login_failures set window_started_at = now() - interval '61 seconds'
    where username_hash = sha256('ghost'::bytea)`;
  const housekeeping = startHousekeeping(
    svc.store,
    { ...svc.config, LOGIN_WINDOW_SECONDS: 60, HOUSEKEEPING_INTERVAL_MS: 20 },
    createLogger("silent"),
  );
  try {
    for (let i = 0; i < 100; i++) {
      const [{ n }] = await svc.sql<
        { n: number }[]
      >`select count(*)::int as n from login_failures`;
      if (n === 2) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await housekeeping.stop();
  }
  const failures = await svc.sql`select 1 from login_failures`;
  // Its count from this address and over all addresses.
  assertEquals(failures.length, 2, "the admin's open windows stay");
  const sessions = await svc.sql<
    { user_id: number }[]
  >`select user_id from sessions`;
  assert(sessions.every((s) => s.user_id === svc.adminAccount.id));
  assertEquals((await client.me()).status, 401);
  assertEquals((await svc.admin.me()).status, 200);
});
