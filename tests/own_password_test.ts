/**
 * A person changes their own password (POST /api/auth/password): with a
 * session, proving the current one; the other sessions end and this one
 * stays; a wrong current password counts toward the login throttle; a key
 * is refused; the change is recorded without a secret.
 */
import { auditPages, type AuditRecord } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({ LOGIN_MAX_FAILURES: "3" }, { bcryptCost: 4 });

const NEW = "a brand new passphrase";

async function records(svc: TestService, action: string, targetId: number) {
  const all: AuditRecord[] = [];
  for await (
    const page of auditPages(svc.admin, { action, targetId } as never)
  ) all.push(...page);
  return all;
}

Deno.test("a viewer changes their own password: 200, this session stays, the others end, the new password signs in and the old one does not", async () => {
  const svc = await service();
  const { client, account, password } = await svc.userClient("viewer");
  const other = svc.client();
  assert((await other.login(account.username, password)).ok);

  const changed = await client.post("/api/auth/password", {
    body: { currentPassword: password, newPassword: NEW },
  });
  assertEquals(changed, { ok: true, status: 200, data: { ok: true } });

  // This session stays; the other one has ended.
  assertEquals((await client.me()).status, 200);
  assertEquals((await other.me()).status, 401);
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from sessions where user_id = ${account.id}`;
  assertEquals(n, 1);

  const old = await svc.client().login(account.username, password);
  assertEquals(old.status, 401);
  assert((await svc.client().login(account.username, NEW)).ok);

  // Recorded once, by and of the person, with no secret in it.
  const [record, ...more] = await records(
    svc,
    "user.password_changed",
    account.id,
  );
  assertEquals(more, []);
  assertEquals(record.actor, { id: account.id, username: account.username });
  assertEquals(record.target, { id: account.id, username: account.username });
  assertEquals(record.details, {});
  const text = JSON.stringify(record);
  assert(!text.includes(password) && !text.includes(NEW), text);
  // A change of one's own password is no reset by an admin.
  assertEquals(await records(svc, "user.password_reset", account.id), []);
});

Deno.test("a wrong current password is 401 and counts toward the login throttle: then 429 with Retry-After, and the login is throttled too", async () => {
  const svc = await service();
  const { client, account, password } = await svc.userClient("viewer");
  const before = await svc.sql`
    select password_hash from users where id = ${account.id}`;
  for (let i = 0; i < 3; i++) {
    assertEquals(
      await client.post("/api/auth/password", {
        body: { currentPassword: "not-the-password", newPassword: NEW },
      }),
      {
        ok: false,
        status: 401,
        error: "Current password is incorrect",
      },
    );
  }
  // LOGIN_MAX_FAILURES (3) reached: the right password is refused too.
  const { error, response } = await client.POST("/api/auth/password", {
    body: { currentPassword: password, newPassword: NEW },
  });
  assertEquals([response.status, error], [429, {
    error: "Too many login attempts",
  }]);
  assert(Number(response.headers.get("retry-after")) > 0);
  // The same count: a login of that name from this address is throttled.
  assertEquals(
    (await svc.client().login(account.username, password)).status,
    429,
  );
  // Nothing changed, and the session still works.
  assertEquals(
    await svc.sql`select password_hash from users where id = ${account.id}`,
    before,
  );
  assertEquals((await client.me()).status, 200);
  assertEquals((await records(svc, "login.throttled", account.id)).length, 1);
});

Deno.test("a success clears the failed attempts that came before it", async () => {
  const svc = await service();
  const { client, account, password } = await svc.userClient("viewer");
  for (let i = 0; i < 2; i++) {
    assertEquals(
      (await client.post("/api/auth/password", {
        body: { currentPassword: "wrong-one-1", newPassword: NEW },
      })).status,
      401,
    );
  }
  assert(
    (await client.post("/api/auth/password", {
      body: { currentPassword: password, newPassword: NEW },
    })).ok,
  );
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from login_failures`;
  assertEquals(n, 0);
  // Three more wrong ones are needed to reach the limit again.
  for (let i = 0; i < 2; i++) {
    assertEquals(
      (await client.post("/api/auth/password", {
        body: { currentPassword: "wrong-one-2", newPassword: password },
      })).status,
      401,
    );
  }
  assert((await svc.client().login(account.username, NEW)).ok);
});

Deno.test("the new password meets the rules of every new password: 400 with the contract's messages, nothing counted", async () => {
  const svc = await service();
  const { client, password } = await svc.userClient("viewer");
  const cases: [unknown, string][] = [
    [
      { currentPassword: password, newPassword: "short" },
      "Password must be at least 8 characters",
    ],
    [
      { currentPassword: password, newPassword: "é".repeat(37) },
      "Password must be at most 72 bytes",
    ],
    [
      { currentPassword: password, newPassword: "nul\u0000inside" },
      "Password must not contain NUL characters",
    ],
    [{ currentPassword: password }, "All fields are required"],
    [{ currentPassword: "", newPassword: NEW }, "All fields are required"],
    [
      { currentPassword: password, newPassword: 12345678 },
      "All fields are required",
    ],
    ["not an object", "All fields are required"],
  ];
  for (const [body, error] of cases) {
    assertEquals(
      await client.post("/api/auth/password", { body: body as never }),
      { ok: false, status: 400, error: error as never },
      JSON.stringify(body),
    );
  }
  // A short new password with a wrong current one: 400 first, not counted.
  assertEquals(
    (await client.post("/api/auth/password", {
      body: { currentPassword: "wrong", newPassword: "short" },
    })).status,
    400,
  );
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from login_failures`;
  assertEquals(n, 0);
});

Deno.test("without a session 401; with an API key 403 Forbidden, its owner's password unchanged", async () => {
  const svc = await service();
  assertEquals(
    await svc.client().post("/api/auth/password", {
      body: { currentPassword: "whatever-1", newPassword: NEW },
    }),
    { ok: false, status: 401, error: "Unauthorised" },
  );
  const { client, account, password } = await svc.userClient("viewer");
  const { key } = await createKey(svc, account.id, "theirs");
  assertEquals(
    await keyClient(svc, key).post("/api/auth/password", {
      body: { currentPassword: password, newPassword: NEW },
    }),
    { ok: false, status: 403, error: "Forbidden" },
  );
  assert((await svc.client().login(account.username, password)).ok);
  // From a foreign page: 403 as well.
  const foreign = await client.POST("/api/auth/password", {
    body: { currentPassword: password, newPassword: NEW },
    headers: { origin: "https://evil.example" },
  });
  assertEquals([foreign.response.status, foreign.error], [403, {
    error: "Forbidden",
  }]);
});

Deno.test("an account without a password answers 409 and counts nothing", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  await svc.sql`update users set password_hash = '!' where id = ${account.id}`;
  assertEquals(
    await client.post("/api/auth/password", {
      body: { currentPassword: "anything-at-all", newPassword: NEW },
    }),
    { ok: false, status: 409, error: "No password is set for this account" },
  );
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from login_failures`;
  assertEquals(n, 0);
});
