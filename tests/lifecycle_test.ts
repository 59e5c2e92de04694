/**
 * Account lifecycle (docs/api.md, "Users (admins only)"): a
 * disable with a reason and an end, what it does to logins and sessions,
 * an enable, a disable running out by itself, the detail's account state
 * and the list's `status` filter.
 */
import {
  auditPages,
  type AuditRecord,
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { NO_DEADLINE } from "../src/db/write.ts";
import { assert, assertEquals, assertNotEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { startCluster } from "./support/cluster.ts";
import {
  sharedService,
  startService,
  type TestService,
} from "./support/service.ts";

// Many logins at once on a busy machine; deadlines are faults_test's subject.
const SETTINGS = { REQUEST_TIMEOUT_MS: "60000" };
// bcrypt's cheapest cost: its work is not this file's subject. The race of
// a disable with logins has a service of its own at the real cost, whose
// password check is most of the window the race needs.
const service = sharedService(SETTINGS, { bcryptCost: 4 });

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The trail's records of this action about this user (tests share one trail). */
async function records(
  api: UserAdminClient,
  action: string,
  targetId: number,
) {
  const all: AuditRecord[] = [];
  for await (
    const page of auditPages(api, { action, targetId } as never)
  ) {
    all.push(...page);
  }
  return all;
}

/** Polls `check` every 50 ms until it answers a value, for at most `ms`. */
async function until<T>(
  check: () => Promise<T | undefined>,
  what: string,
  ms = 15_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const login = (svc: TestService, username: string, password: string) =>
  svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
  });

Deno.test("a disabled user cannot sign in (403 with the right password, 401 with a wrong one), their sessions end, and an enable lets them in again", async () => {
  const svc = await service();
  const { client, account, password } = await svc.userClient("viewer");
  const other = await svc.userClient("viewer");
  assertEquals((await client.me()).status, 200);

  const disabled = await svc.admin.disableUser(account.id, {
    reason: "Left the company",
  });
  assert(disabled.ok, JSON.stringify(disabled));
  assertEquals(disabled.data.disabled?.reason, "Left the company");
  assertEquals(disabled.data.disabled?.until, null);
  assert(ISO_MS.test(disabled.data.disabled!.since));
  assertEquals(disabled.data.id, account.id);

  // The session ended with the disable: 401 on the next request.
  assertEquals(await client.me(), {
    ok: false,
    status: 401,
    error: "Unauthorised",
  });
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from sessions where user_id = ${account.id}`;
  assertEquals(n, 0, "no session row is left");
  // Another user's session is untouched.
  assertEquals((await other.client.me()).status, 200);

  const right = await login(svc, account.username, password);
  assertEquals([right.status, await right.json()], [403, {
    error: "Account disabled",
  }]);
  assertEquals(right.headers.getSetCookie(), [], "no sid, no did");
  const wrong = await login(svc, account.username, "not-the-password");
  assertEquals([wrong.status, await wrong.json()], [401, {
    error: "Invalid username or password",
  }]);

  const refused = await records(svc.admin, "login.refused", account.id);
  assertEquals(refused.length, 1);
  assertEquals(refused[0].target?.id, account.id);
  assertEquals(refused[0].details, { reason: "disabled" });
  const [record] = await records(svc.admin, "user.disabled", account.id);
  assertEquals(record.details, { reason: "Left the company", until: null });
  assertEquals(record.actor?.id, svc.adminAccount.id);

  const enabled = await svc.admin.enableUser(account.id);
  assert(enabled.ok);
  assertEquals(enabled.data.disabled, null);
  const again = await login(svc, account.username, password);
  assertEquals(again.status, 200);
  const [done] = await records(svc.admin, "user.enabled", account.id);
  assertEquals([done.target?.id, done.details], [account.id, {}]);
});

Deno.test("the answer to a disabled user's right password counts as no failed attempt and clears none", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  for (let i = 0; i < 2; i++) {
    assertEquals(
      (await login(svc, account.username, "wrong-" + i)).status,
      401,
    );
  }
  const counts = () =>
    svc.sql<{ client: string; failures: number }[]>`
      select client, failures from login_failures order by client`;
  const before = [...await counts()];
  assertEquals(before.map((r) => r.failures), [2, 2]);
  assert((await svc.admin.disableUser(account.id)).ok);
  for (let i = 0; i < 3; i++) {
    assertEquals((await login(svc, account.username, password)).status, 403);
  }
  assertEquals([...await counts()], before);
});

Deno.test("disable and enable check in the declared order, and refuse bad input", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const viewer = await svc.userClient("viewer");
  const post = (path: string, body?: string, cookie = true) =>
    (cookie ? svc.adminFetch : svc.fetch)(path, {
      method: "POST",
      ...(body === undefined ? {} : { body }),
    });
  const answer = async (res: Response) => [res.status, await res.json()];
  const self = `/api/users/${svc.adminAccount.id}/disable`;
  const target = `/api/users/${account.id}/disable`;

  assertEquals(await answer(await post(target, undefined, false)), [401, {
    error: "Unauthorised",
  }]);
  const byViewer = await viewer.client.disableUser(account.id);
  assertEquals([byViewer.status, !byViewer.ok && byViewer.error], [
    403,
    "Forbidden",
  ]);
  // Self before any lookup and before the body.
  assertEquals(await answer(await post(self, "not json")), [400, {
    error: "You cannot disable your own account",
  }]);
  // The id before the body.
  for (const id of ["999999", "abc", "0", "1.5", "-1"]) {
    assertEquals(
      await answer(await post(`/api/users/${id}/disable`, "not json")),
      [404, { error: "User not found" }],
      id,
    );
  }
  const invalid = [400, { error: "Invalid request body" }];
  const past = new Date(Date.now() - 60_000).toISOString();
  for (
    const body of [
      "not json",
      "[]",
      '"reason"',
      JSON.stringify({ reason: "x".repeat(201) }),
      JSON.stringify({ reason: 5 }),
      '{"reason": "a\\u0000b"}',
      '{"reason": "\\ud800"}',
      JSON.stringify({ until: past }),
      JSON.stringify({ until: "tomorrow" }),
      JSON.stringify({ until: "2999-02-30T00:00:00Z" }),
      JSON.stringify({ until: 4102444800000 }),
    ]
  ) {
    assertEquals(await answer(await post(target, body)), invalid, body);
  }
  const none = await svc.sql`
    select 1 from users where id = ${account.id} and disabled_at is not null`;
  assertEquals(none.length, 0, "no refused disable wrote anything");
  // 200 characters (code points) is the limit.
  const reason = "é".repeat(199) + "😀";
  const ok = await svc.admin.disableUser(account.id, { reason });
  assertEquals([ok.status, ok.ok && ok.data.disabled?.reason], [200, reason]);

  assertEquals(await answer(await post("/api/users/abc/enable")), [404, {
    error: "User not found",
  }]);
  assertEquals(await answer(await post("/api/users/999999/enable")), [404, {
    error: "User not found",
  }]);
  const plain = await svc.admin.enableUser(viewer.account.id);
  assertEquals([plain.status, plain.ok && plain.data.disabled], [200, null]);
  assertEquals(
    (await records(svc.admin, "user.enabled", viewer.account.id)).length,
    0,
    "enabling a user who is not disabled records nothing",
  );
});

Deno.test("no body disables without reason or end; disabling again changes reason and end and keeps since; each disable and enable changes the ETag", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const path = `/api/users/${account.id}`;
  const tagOf = async () => (await svc.adminFetch(path)).headers.get("etag")!;
  const first = await tagOf();

  const bare = await svc.adminFetch(`${path}/disable`, { method: "POST" });
  const detail = await bare.json();
  assertEquals(bare.status, 200);
  assertEquals(detail.disabled.reason, null);
  assertEquals(detail.disabled.until, null);
  const second = await tagOf();
  assertNotEquals(second, first);
  assertEquals(bare.headers.get("etag"), second);

  const until = new Date(Date.now() + 86_400_000);
  const changed = await svc.admin.disableUser(account.id, {
    reason: "Holiday",
    until: until.toISOString().replace("Z", "+00:00"),
  });
  assert(changed.ok);
  assertEquals(changed.data.disabled, {
    reason: "Holiday",
    until: until.toISOString(),
    since: detail.disabled.since,
  });
  const third = await tagOf();
  assertNotEquals(third, second);
  const stale = await svc.adminFetch(path, {
    headers: { "if-none-match": second },
  });
  assertEquals(stale.status, 200);
  const fresh = await svc.adminFetch(path, {
    headers: { "if-none-match": third },
  });
  assertEquals(fresh.status, 304);

  assert((await svc.admin.enableUser(account.id)).ok);
  const fourth = await tagOf();
  assert(![first, second, third].includes(fourth));
  const [one] = await records(svc.admin, "user.disabled", account.id);
  assertEquals(one.details, { reason: "Holiday", until: until.toISOString() });
});

Deno.test("a login writes lastLoginAt; the list's items keep exactly the contract's six fields", async () => {
  const svc = await service();
  const created = await svc.admin.post("/api/users", {
    body: {
      username: "dora",
      name: "Dora",
      email: "dora@example.com",
      password: "dora-password",
      role: "viewer",
    },
  });
  assert(created.ok);
  const before = await svc.admin.get("/api/users/{id}", {
    params: { path: { id: created.data.id } },
  });
  assert(before.ok);
  assertEquals(before.data.lastLoginAt, null);
  const start = Date.now();
  assertEquals((await login(svc, "dora", "dora-password")).status, 200);
  const after = await svc.admin.get("/api/users/{id}", {
    params: { path: { id: created.data.id } },
  });
  assert(after.ok && after.data.lastLoginAt !== null);
  assert(ISO_MS.test(after.data.lastLoginAt));
  assert(Math.abs(Date.parse(after.data.lastLoginAt) - start) < 60_000);

  assert((await svc.admin.disableUser(created.data.id)).ok);
  for (const query of ["", "?status=disabled", "?limit=5", "?q=dora"]) {
    const list = await svc.adminFetch(`/api/users${query}`);
    for (const item of await list.json()) {
      assertEquals(Object.keys(item).sort(), [
        "createdAt",
        "email",
        "id",
        "name",
        "role",
        "username",
      ], query);
    }
  }
});

Deno.test("a disabled admin's cookie answers 401 everywhere, and their writes too", async () => {
  const svc = await service();
  const other = await svc.userClient("admin");
  const { account } = await svc.userClient("viewer");
  assertEquals((await other.client.get("/api/users")).status, 200);
  assert((await svc.admin.disableUser(other.account.id)).ok);
  assertEquals((await other.client.get("/api/users")).status, 401);
  assertEquals((await other.client.me()).status, 401);
  const write = await other.client.disableUser(account.id);
  assertEquals([write.status, !write.ok && write.error], [401, "Unauthorised"]);
});

Deno.test("a disable whose until passes lets the user in by itself: the detail, its ETag and the status filter follow at once, and the next login or the sweep, whichever comes first, records user.enabled {expired: true} once", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const until = new Date(Date.now() + 1500).toISOString();
  const disabled = await svc.admin.disableUser(account.id, { until });
  assert(disabled.ok && disabled.data.disabled !== null);
  const path = `/api/users/${account.id}`;
  const tag = (await svc.adminFetch(path)).headers.get("etag")!;
  const listTag = (await svc.adminFetch("/api/users?status=disabled"))
    .headers.get("etag")!;
  assertEquals((await login(svc, account.username, password)).status, 403);

  // Polled: the detail changes when `until` passes, with no write.
  const detail = await until_(async () => {
    const res = await svc.adminFetch(path, {
      headers: { "if-none-match": tag },
    });
    return res.status === 200 ? await res.json() : undefined;
  });
  assertEquals(detail.disabled, null);
  assert(Date.now() >= Date.parse(until));
  const list = await svc.adminFetch("/api/users?status=disabled", {
    headers: { "if-none-match": listTag },
  });
  assertEquals([list.status, await list.json()], [200, []]);
  const active = await svc.adminFetch("/api/users?status=active");
  assert(
    (await active.json()).some((u: { id: number }) => u.id === account.id),
  );
  // The reads recorded nothing; the sweep (every 250 ms) may have, once.
  assert(
    (await records(svc.admin, "user.enabled", account.id)).length <= 1,
    "recorded by the login or the sweep, not by a read",
  );

  assertEquals((await login(svc, account.username, password)).status, 200);
  assertEquals((await login(svc, account.username, password)).status, 200);
  const enabled = await records(svc.admin, "user.enabled", account.id);
  assertEquals(enabled.map((r) => [r.target?.id, r.actor, r.details]), [
    [account.id, null, { expired: true }],
  ]);
  // Nothing left for the sweep.
  assertEquals(await svc.store.users.recordExpiredDisables(NO_DEADLINE), 0);
});

Deno.test("the housekeeping sweep records a disable that ran out when it comes before the user's login", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const end = new Date(Date.now() + 1000).toISOString();
  assert((await svc.admin.disableUser(account.id, { until: end })).ok);
  await until_(async () => {
    const one = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: account.id } },
    });
    return one.ok && one.data.disabled === null ? true : undefined;
  });
  // The service's own sweep (every 250 ms in the tests) records it; once.
  await until_(async () =>
    (await records(svc.admin, "user.enabled", account.id)).length
      ? true
      : undefined
  );
  assertEquals(await svc.store.users.recordExpiredDisables(NO_DEADLINE), 0);
  assertEquals((await login(svc, account.username, password)).status, 200);
  const enabled = await records(svc.admin, "user.enabled", account.id);
  assertEquals(enabled.map((r) => [r.target?.id, r.details]), [
    [account.id, { expired: true }],
  ]);
});

const until_ = <T>(check: () => Promise<T | undefined>) =>
  until(check, "the disable to run out");

Deno.test("status=active|disabled filters, combines with role, q and paging, and answers conditional requests", async () => {
  const svc = await service();
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) {
    const role = i % 2 === 0 ? "viewer" : "admin";
    const created = await svc.admin.post("/api/users", {
      body: {
        username: `member${i}`,
        name: `Member ${i}`,
        email: `member${i}@example.com`,
        password: `member-${i}-password`,
        role,
      },
    });
    assert(created.ok);
    ids.push(created.data.id);
  }
  // Disabled: 0, 1, 2 (2 until tomorrow); active: the admin, 3, 4, 5.
  for (const i of [0, 1]) assert((await svc.admin.disableUser(ids[i])).ok);
  assert(
    (await svc.admin.disableUser(ids[2], {
      until: new Date(Date.now() + 86_400_000).toISOString(),
    })).ok,
  );
  const idsOf = async (query: string) => {
    const res = await svc.adminFetch(`/api/users?${query}`);
    assertEquals(res.status, 200, query);
    return (await res.json()).map((u: { id: number }) => u.id);
  };
  assertEquals(await idsOf("status=disabled"), [ids[0], ids[1], ids[2]]);
  assertEquals(await idsOf("status=active"), [
    svc.adminAccount.id,
    ids[3],
    ids[4],
    ids[5],
  ]);
  assertEquals(await idsOf("status=disabled&role=viewer"), [ids[0], ids[2]]);
  assertEquals(await idsOf("status=active&q=member"), [ids[3], ids[4], ids[5]]);
  assertEquals(await idsOf("status=active&role=admin"), [
    svc.adminAccount.id,
    ids[3],
    ids[5],
  ]);

  // Paging keeps the filter in its links.
  const walked: number[] = [];
  for await (
    const u of svc.admin.users({ status: "disabled" } as never, 1)
  ) walked.push(u.id);
  assertEquals(walked, [ids[0], ids[1], ids[2]]);
  const page = await svc.adminFetch("/api/users?status=active&limit=2");
  assertEquals(page.status, 200);
  assert(page.headers.get("link")!.includes("status=active"));

  for (
    const bad of [
      "status=foo",
      "status=",
      "status=Disabled",
      "status=active&status=disabled",
    ]
  ) {
    const res = await svc.adminFetch(`/api/users?${bad}`);
    assertEquals([res.status, await res.json()], [400, {
      error: "Invalid query parameter: status",
    }], bad);
  }

  const first = await svc.adminFetch("/api/users?status=disabled");
  const tag = first.headers.get("etag")!;
  assertNotEquals(
    tag,
    (await svc.adminFetch("/api/users?status=active")).headers.get("etag"),
  );
  assertNotEquals(
    tag,
    (await svc.adminFetch("/api/users")).headers.get("etag"),
  );
  const same = await svc.adminFetch("/api/users?status=disabled", {
    headers: { "if-none-match": tag },
  });
  assertEquals(same.status, 304);
  assert((await svc.admin.enableUser(ids[1])).ok);
  const after = await svc.adminFetch("/api/users?status=disabled", {
    headers: { "if-none-match": tag },
  });
  assertEquals(after.status, 200);
  assertEquals(
    (await after.json()).map((u: { id: number }) => u.id),
    [ids[0], ids[2]],
  );
});

Deno.test("a disable racing logins of the same user leaves no session, round after round", async () => {
  await using svc = await startService(SETTINGS);
  const ROUNDS = 12;
  const users = await Promise.all(
    Array.from({ length: ROUNDS }, () => svc.userClient("viewer")),
  );
  // Each user's own session (from userClient) ended with the disable too.
  await Promise.all(users.map(async ({ account, password }) => {
    const logins = Array.from(
      { length: 3 },
      () => login(svc, account.username, password),
    );
    const disable = svc.admin.disableUser(account.id);
    const answers = await Promise.all(logins);
    assert((await disable).ok);
    for (const res of answers) {
      assert([200, 403].includes(res.status), String(res.status));
      await res.body?.cancel();
    }
  }));
  const left = await svc.sql<{ user_id: number }[]>`
    select user_id from sessions where user_id = any(${
    users.map((u) => u.account.id)
  }::int[])`;
  assertEquals([...left], [], "no session outlives the disable");
  // And none comes back with an enable.
  for (const { account, client } of users.slice(0, 3)) {
    assert((await svc.admin.enableUser(account.id)).ok);
    assertEquals((await client.me()).status, 401);
  }
});

Deno.test({
  ...postgresOnly(
    "a user disabled through one instance is refused on another at their next request",
  ),
  async fn() {
    await using cluster = await startCluster(2);
    const [a, b] = cluster.urls;
    const admin = createUserAdminClient({
      baseUrl: a,
      headers: { cookie: await cluster.login(0) },
    });
    const created = await admin.post("/api/users", {
      body: {
        username: "carol",
        name: "Carol",
        email: "carol@example.com",
        password: "carol-password",
        role: "admin",
      },
    });
    assert(created.ok);
    const carol = createUserAdminClient({
      baseUrl: b,
      headers: {
        cookie: await cluster.login(1, {
          username: "carol",
          password: "carol-password",
        }),
      },
    });
    assertEquals((await carol.get("/api/users")).status, 200);
    assert((await admin.disableUser(created.data.id)).ok);
    assertEquals((await carol.get("/api/users")).status, 401);
    const res = await fetch(`${b}/api/auth/login`, {
      method: "POST",
      body: JSON.stringify({ username: "carol", password: "carol-password" }),
    });
    assertEquals([res.status, await res.json()], [403, {
      error: "Account disabled",
    }]);
  },
});

Deno.test("a disable whose sessions cannot be ended is not applied: 500 Failed to disable user, the user still active and signed in", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  await svc.sql.unsafe(`
    create function refuse_session_delete() returns trigger language plpgsql
    as $$ begin raise exception 'refused'; end $$`);
  await svc.sql`
    create trigger refuse_session_delete before delete on sessions
    for each row execute function refuse_session_delete()`;
  try {
    const res = await svc.admin.disableUser(account.id, { reason: "x" });
    assertEquals([res.status, !res.ok && res.error], [
      500,
      "Failed to disable user",
    ]);
  } finally {
    await svc.sql`drop trigger refuse_session_delete on sessions`;
    await svc.sql`drop function refuse_session_delete`;
  }
  const one = await svc.admin.get("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals(one.ok && one.data.disabled, null);
  assertEquals((await client.me()).status, 200);
  assertEquals(
    (await records(svc.admin, "user.disabled", account.id)).length,
    0,
  );
});
