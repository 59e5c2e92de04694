/**
 * The trail as the API's writes leave it: each account change and each
 * sign-in recorded with actor, target, details, request id and client
 * address, in the same transaction as the change (a failing record undoes
 * the change and answers the endpoint's 500; a change that fails leaves no
 * record).
 */
import { auditPages, type AuditRecord } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { startService, type TestService } from "./support/service.ts";
import { FAIL_AUDIT, HEAL_AUDIT } from "./audit_support.ts";

/** Every record newer than `afterId`, oldest first, read through the client. */
async function recordsAfter(svc: TestService, afterId: number) {
  const all: AuditRecord[] = [];
  for await (const page of auditPages(svc.admin, { limit: 1000 })) {
    all.push(...page);
  }
  return all.filter((r) => r.id > afterId).reverse();
}

async function newestId(svc: TestService) {
  const [r] = await recordsAfter(svc, 0).then((all) => all.slice(-1));
  return r?.id ?? 0;
}

/** What a record says, without its id and time. */
const gist = (r: AuditRecord) => ({
  action: r.action,
  actor: r.actor,
  target: r.target,
  details: r.details,
});

Deno.test("each change of an account and each sign-in is recorded with its actor, target, details, request id and client address", async () => {
  await using svc = await startService({ LOGIN_MAX_FAILURES: "2" });
  const admin = { id: svc.adminAccount.id, username: "admin" };
  const since = await newestId(svc);

  const created = await svc.admin.post("/api/users", {
    body: {
      username: "alice",
      name: "Alice",
      email: "alice@example.com",
      password: "alice-password-1",
      role: "viewer",
    },
  });
  assert(created.ok);
  const alice = { id: created.data.id, username: "alice" };
  const path = { params: { path: { id: alice.id } } };
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { role: "admin" },
    })).ok,
  );
  // The same role again changes nothing, so it records nothing.
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { role: "admin" },
    })).ok,
  );
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { password: "alice-password-2" },
    })).ok,
  );

  const aliceClient = svc.client();
  assertEquals(
    (await aliceClient.login("alice", "wrong-password")).status,
    401,
  );
  assertEquals(
    (await aliceClient.login("alice", "alice-password-2")).status,
    200,
  );
  assertEquals((await aliceClient.logout()).status, 200);
  const stranger = svc.client();
  assertEquals(
    (await stranger.login("nobody-by-that-name", "whatever-1")).status,
    401,
  );
  // Two failures allowed per address, then 429.
  assertEquals((await stranger.login("alice", "wrong-again")).status, 401);
  assertEquals((await stranger.login("alice", "wrong-once-more")).status, 401);
  assertEquals((await stranger.login("alice", "alice-password-2")).status, 429);
  const deleted = await svc.admin.delete("/api/users/{id}", path);
  assert(deleted.ok);

  const records = await recordsAfter(svc, since);
  assertEquals(records.map(gist), [
    {
      action: "user.created",
      actor: admin,
      target: alice,
      details: { role: "viewer" },
    },
    {
      action: "user.role_changed",
      actor: admin,
      target: alice,
      details: { from: "viewer", to: "admin" },
    },
    {
      action: "user.password_reset",
      actor: admin,
      target: alice,
      details: {},
    },
    {
      action: "login.failed",
      actor: null,
      target: alice,
      details: { reason: "wrong_password" },
    },
    {
      action: "login.succeeded",
      actor: alice,
      target: alice,
      details: { methods: ["password"] },
    },
    { action: "logout", actor: alice, target: alice, details: {} },
    {
      action: "login.failed",
      actor: null,
      target: null,
      details: { reason: "unknown_user" },
    },
    {
      action: "login.failed",
      actor: null,
      target: alice,
      details: { reason: "wrong_password" },
    },
    {
      action: "login.failed",
      actor: null,
      target: alice,
      details: { reason: "wrong_password" },
    },
    {
      action: "login.throttled",
      actor: null,
      target: alice,
      details: { retryAfter: records[9]?.details.retryAfter },
    },
    { action: "user.deleted", actor: admin, target: alice, details: {} },
  ]);
  const retryAfter = records[9].details.retryAfter;
  assert(typeof retryAfter === "number" && retryAfter > 0, `${retryAfter}`);
  for (const r of records) {
    assertEquals(r.clientAddress, "127.0.0.1", r.action);
    assertEquals(r.via, "api", r.action);
    assert(r.requestId, `${r.action} has a request id`);
  }
  assertEquals(
    new Set(records.map((r) => r.requestId)).size,
    records.length,
    "each request its own id",
  );
  // The attempted name of an unknown user is kept nowhere.
  assert(!JSON.stringify(records).includes("nobody-by-that-name"));
});

Deno.test("when its audit record cannot be written, a change is rolled back and answers the endpoint's 500", async () => {
  await using svc = await startService();
  const target = await svc.userClient("viewer");
  const id = target.account.id;
  const path = { params: { path: { id } } };
  const since = await newestId(svc);
  await svc.sql.unsafe(FAIL_AUDIT);
  try {
    const created = await svc.admin.post("/api/users", {
      body: {
        username: "carol",
        name: "Carol",
        email: "carol@example.com",
        password: "carol-password",
        role: "viewer",
      },
    });
    assertEquals([created.status, created.ok ? "" : created.error], [
      500,
      "Failed to create user",
    ]);
    const promoted = await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { role: "admin" },
    });
    assertEquals([promoted.status, promoted.ok ? "" : promoted.error], [
      500,
      "Update failed",
    ]);
    const reset = await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { password: "a-new-password" },
    });
    assertEquals([reset.status, reset.ok ? "" : reset.error], [
      500,
      "Update failed",
    ]);
    const removed = await svc.admin.delete("/api/users/{id}", path);
    assertEquals([removed.status, removed.ok ? "" : removed.error], [
      500,
      "Delete failed",
    ]);
    const login = await svc.client().login(
      target.account.username,
      target.password,
    );
    assertEquals([login.status, login.ok ? "" : login.error], [
      500,
      "Login failed",
    ]);
  } finally {
    await svc.sql.unsafe(HEAL_AUDIT);
  }
  // Nothing of it happened: no carol, the viewer unchanged with the old
  // password and their session, no session from the failed login.
  const carol = await svc.admin.findByUsername("carol");
  assert(carol.ok);
  assertEquals(carol.data, null);
  const after = await svc.admin.get("/api/users/{id}", path);
  assert(after.ok);
  assertEquals(after.data.role, "viewer");
  assertEquals((await target.client.me()).status, 200);
  assertEquals(
    (await svc.client().login(target.account.username, target.password))
      .status,
    200,
  );
  const [{ sessions }] = await svc.sql<{ sessions: number }[]>`
    select count(*)::int as sessions from sessions where user_id = ${id}`;
  assertEquals(sessions, 2, "the viewer's first session and the last login's");
  // Only the last login is on record.
  assertEquals((await recordsAfter(svc, since)).map((r) => r.action), [
    "login.succeeded",
  ]);
});

Deno.test("a change that is refused leaves no record", async () => {
  await using svc = await startService();
  const viewer = await svc.userClient("viewer");
  const id = viewer.account.id;
  const since = await newestId(svc);
  const duplicate = await svc.admin.post("/api/users", {
    body: {
      username: viewer.account.username.toUpperCase(),
      name: "Again",
      email: "again@example.com",
      password: "again-password",
      role: "viewer",
    },
  });
  assertEquals(duplicate.status, 409);
  assertEquals(
    (await svc.admin.patch("/api/users/{id}", {
      params: { path: { id: 2_000_000_000 } },
      body: { role: "admin" },
    })).status,
    404,
  );
  assertEquals(
    (await svc.admin.patch("/api/users/{id}", {
      params: { path: { id }, header: { "if-match": '"stale"' } },
      body: { role: "admin" },
    })).status,
    412,
  );
  assertEquals(
    (await svc.admin.delete("/api/users/{id}", {
      params: { path: { id: svc.adminAccount.id } },
    })).status,
    400,
  );
  // A viewer's attempt is refused before anything is written.
  assertEquals(
    (await viewer.client.delete("/api/users/{id}", {
      params: { path: { id: svc.adminAccount.id } },
    })).status,
    403,
  );
  assertEquals(await recordsAfter(svc, since), []);
});
