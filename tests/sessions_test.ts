/**
 * A user's sessions as an admin sees and ends them (docs/security.md,
 * "Sessions"): public ids, never tokens; the caller's own
 * marked; last seen written at most once a minute; one or all ended.
 */
import { createHash } from "node:crypto";
import { auditPages, type AuditRecord } from "@user-admin/client";
import { assert, assertEquals, assertNotEquals } from "./support/assert.ts";
import { sharedService, sidOf, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Logs in with this User-Agent; answers the cookie header value. */
async function loginAs(
  svc: TestService,
  username: string,
  password: string,
  userAgent?: string,
) {
  const headers: Record<string, string> = {};
  if (userAgent !== undefined) headers["user-agent"] = userAgent;
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
    headers,
  });
  assertEquals(res.status, 200);
  await res.body?.cancel();
  return { cookie: `sid=${sidOf(res)}`, token: sidOf(res)! };
}

const me = (svc: TestService, cookie: string) =>
  svc.fetch("/api/auth/me", { headers: { cookie } }).then(async (r) => {
    await r.body?.cancel();
    return r.status;
  });

async function ended(svc: TestService, targetId: number) {
  const all: AuditRecord[] = [];
  for await (
    const page of auditPages(svc.admin, {
      action: "sessions.ended",
      targetId,
    } as never)
  ) all.push(...page);
  return all.map((r) => r.details);
}

Deno.test("an admin sees a user's live sessions newest first, by public id, with where they came from and which is the caller's own", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const first = await loginAs(svc, account.username, password, "Browser/1");
  const second = await loginAs(svc, account.username, password, "Browser/2");
  // An expired one is no live session.
  await svc.sql`
    update sessions set expires_at = now() - interval '1 second'
    where user_id = ${account.id}
      and user_agent is distinct from 'Browser/1'
      and user_agent is distinct from 'Browser/2'`;

  const listed = await svc.admin.listSessions(account.id);
  assert(listed.ok, JSON.stringify(listed));
  assertEquals(listed.data.map((s) => s.userAgent), ["Browser/2", "Browser/1"]);
  for (const s of listed.data) {
    assertEquals(Object.keys(s).sort(), [
      "clientAddress",
      "createdAt",
      "current",
      "expiresAt",
      "id",
      "lastSeenAt",
      "userAgent",
    ]);
    assert(UUID.test(s.id), s.id);
    assert(ISO_MS.test(s.createdAt) && ISO_MS.test(s.expiresAt));
    assertEquals(s.clientAddress, "127.0.0.1");
    assertEquals(s.current, false);
  }
  // Never the token nor its hash.
  const text = JSON.stringify(listed.data);
  for (const { token } of [first, second]) {
    assert(!text.includes(token));
    assert(!text.includes(createHash("sha256").update(token).digest("hex")));
  }
  assertNotEquals(listed.data[0].id, listed.data[1].id);

  const own = await svc.admin.listSessions(svc.adminAccount.id);
  assert(own.ok);
  assertEquals(own.data.filter((s) => s.current).length, 1);
});

Deno.test("a login keeps at most 256 characters of its User-Agent", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  await loginAs(svc, account.username, password, "é".repeat(300));
  const listed = await svc.admin.listSessions(account.id);
  assert(listed.ok);
  const agent = listed.data.find((s) => s.userAgent?.startsWith("é"))!
    .userAgent!;
  assertEquals(agent, "é".repeat(256));
});

Deno.test("ending one session ends only it; another user's session id, a malformed id or an ended one is Session not found", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const other = await svc.userClient("viewer");
  const a = await loginAs(svc, account.username, password, "A");
  const b = await loginAs(svc, account.username, password, "B");
  const listed = await svc.admin.listSessions(account.id);
  assert(listed.ok);
  const idOf = (agent: string) =>
    listed.data.find((s) => s.userAgent === agent)!.id;

  const done = await svc.admin.endSessions(account.id, idOf("A"));
  assertEquals([done.status, done.ok && done.data], [200, {
    ok: true,
    ended: 1,
  }]);
  assertEquals(await me(svc, a.cookie), 401);
  assertEquals(await me(svc, b.cookie), 200);
  assertEquals(await ended(svc, account.id), [{ count: 1 }]);

  const notFound = {
    ok: false as const,
    status: 404 as const,
    error: "Session not found" as const,
  };
  assertEquals(await svc.admin.endSessions(account.id, idOf("A")), notFound);
  const theirs = await svc.admin.listSessions(other.account.id);
  assert(theirs.ok && theirs.data.length === 1);
  assertEquals(
    await svc.admin.endSessions(account.id, theirs.data[0].id),
    notFound,
  );
  assertEquals((await other.client.me()).status, 200, "theirs still works");
  for (const id of ["nope", "1", "0000", idOf("B") + "0"]) {
    const res = await svc.adminFetch(
      `/api/users/${account.id}/sessions/${id}`,
      { method: "DELETE" },
    );
    assertEquals([res.status, await res.json()], [404, {
      error: "Session not found",
    }], id);
  }
  // The id, any case, is still B's.
  const upper = await svc.adminFetch(
    `/api/users/${account.id}/sessions/${idOf("B").toUpperCase()}`,
    { method: "DELETE" },
  );
  assertEquals(upper.status, 200);
  assertEquals(await me(svc, b.cookie), 401);
});

Deno.test("ending all of a user's sessions answers how many ended and records it", async () => {
  const svc = await service();
  const { account, password, client } = await svc.userClient("viewer");
  const a = await loginAs(svc, account.username, password);
  const all = await svc.admin.endSessions(account.id);
  assertEquals([all.status, all.ok && all.data], [200, { ok: true, ended: 2 }]);
  assertEquals(await me(svc, a.cookie), 401);
  assertEquals((await client.me()).status, 401);
  const again = await svc.admin.endSessions(account.id);
  assertEquals(again.ok && again.data, { ok: true, ended: 0 });
  assertEquals(await ended(svc, account.id), [{ count: 2 }]);
  const listed = await svc.admin.listSessions(account.id);
  assertEquals(listed.ok && listed.data, []);
});

Deno.test("the sessions endpoints answer 401, 403 and User not found as the others do", async () => {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  const paths = [
    ["GET", `/api/users/${viewer.account.id}/sessions`],
    ["DELETE", `/api/users/${viewer.account.id}/sessions`],
    [
      "DELETE",
      `/api/users/${viewer.account.id}/sessions/5b0e6a2c-8f0f-4a55-9f4e-2d9b8f3c1a77`,
    ],
  ];
  for (const [method, path] of paths) {
    const anonymous = await svc.fetch(path, { method });
    assertEquals([anonymous.status, await anonymous.json()], [401, {
      error: "Unauthorised",
    }], path);
    const forbidden = await svc.fetch(path, {
      method,
      headers: { cookie: await loginCookieOf(svc, viewer) },
    });
    assertEquals([forbidden.status, await forbidden.json()], [403, {
      error: "Forbidden",
    }], path);
  }
  for (const id of ["999999", "abc", "0", "1.5", "-1", "2147483648"]) {
    for (
      const [method, path] of [
        ["GET", `/api/users/${id}/sessions`],
        ["DELETE", `/api/users/${id}/sessions`],
        ["DELETE", `/api/users/${id}/sessions/not-a-uuid`],
      ]
    ) {
      const res = await svc.adminFetch(path, { method });
      assertEquals([res.status, await res.json()], [404, {
        error: "User not found",
      }], `${method} ${path}`);
    }
  }
});

async function loginCookieOf(
  svc: TestService,
  user: { account: { username: string }; password: string },
) {
  return (await loginAs(svc, user.account.username, user.password)).cookie;
}

Deno.test("lastSeenAt is written at most once a minute, by the caller lookup", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const { token, cookie } = await loginAs(svc, account.username, password);
  const hash = createHash("sha256").update(token).digest();
  const seen = async () => {
    const [row] = await svc.sql<{ seen: string | null }[]>`
      select (extract(epoch from last_seen_at) * 1000000)::int8::text as seen
      from sessions where token_hash = ${hash}`;
    return row.seen;
  };
  assertEquals(await seen(), null, "not seen before its first request");
  assertEquals(await me(svc, cookie), 200);
  const first = await seen();
  assert(first !== null);
  for (let i = 0; i < 5; i++) assertEquals(await me(svc, cookie), 200);
  assertEquals(await seen(), first, "not written again within the minute");

  // A minute later (moved back in the row): written again by the next request.
  await svc.sql`
    update sessions set last_seen_at = last_seen_at - interval '61 seconds'
    where token_hash = ${hash}`;
  const moved = await seen();
  assertEquals(await me(svc, cookie), 200);
  const second = await seen();
  assert(BigInt(second!) > BigInt(moved!) + 60_000_000n);
  const listed = await svc.admin.listSessions(account.id);
  assert(listed.ok);
  const shown = listed.data.find((s) => s.lastSeenAt !== null)!;
  assert(
    Math.abs(Date.parse(shown.lastSeenAt!) * 1000 - Number(second)) < 1000,
  );
  // 59 seconds is within the minute: not written.
  await svc.sql`
    update sessions set last_seen_at = now() - interval '59 seconds'
    where token_hash = ${hash}`;
  const recent = await seen();
  assertEquals(await me(svc, cookie), 200);
  assertEquals(await seen(), recent);
});

Deno.test("a session an older release made (no public id yet, no address, agent or last seen) keeps working and is listed", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const token = "o".repeat(43);
  const hash = createHash("sha256").update(token).digest();
  // As a release without migration 016 inserts it: the column default
  // gives it a public id.
  await svc.sql`
    insert into sessions (token_hash, user_id, password_version, expires_at)
    values (${hash}, ${account.id}, 1, now() + interval '1 hour')`;
  assertEquals(await me(svc, `sid=${token}`), 200);
  const listed = await svc.admin.listSessions(account.id);
  assert(listed.ok);
  const old = listed.data.find((s) => s.clientAddress === null)!;
  assert(UUID.test(old.id));
  assertEquals(old.userAgent, null);
  assert(old.lastSeenAt !== null, "seen by the request just made");
  const done = await svc.admin.endSessions(account.id, old.id);
  assertEquals(done.ok && done.data, { ok: true, ended: 1 });
  assertEquals(await me(svc, `sid=${token}`), 401);
});
