/**
 * GET /api/overview through the generated client: the counts of users as
 * the users table has them, sign-ins per UTC day over 14 days, webhook
 * health from each endpoint's last attempt, and each section left out
 * (null) for a caller without its permission. Messages as docs/api.md
 * states them.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

/** The overview as the first admin reads it. */
async function overview(svc: TestService) {
  const answer = await svc.admin.get("/api/overview");
  assert(answer.ok, JSON.stringify(answer));
  return answer.data;
}

let made = 0;
async function create(svc: TestService, role: "admin" | "viewer") {
  const n = ++made;
  const created = await svc.admin.post("/api/users", {
    body: {
      username: `overview-${n}`,
      name: `Overview ${n}`,
      email: `overview-${n}@example.com`,
      password: `overview-password-${n}`,
      role,
    },
  });
  assert(created.ok, JSON.stringify(created));
  return created.data;
}

const today = () => new Date().toISOString().slice(0, 10);

Deno.test("the overview counts users, admins, disabled users and admins without a second factor", async () => {
  const svc = await service();
  // The first admin alone, with no factor.
  assertEquals((await overview(svc)).users, {
    total: 1,
    admins: 1,
    disabled: 0,
    unenrolledAdmins: 1,
  });
  const a = await create(svc, "viewer");
  await create(svc, "viewer");
  await create(svc, "admin");
  const disabled = await svc.admin.post("/api/users/{id}/disable", {
    params: { path: { id: a.id } },
    body: { reason: "left" },
  });
  assert(disabled.ok, JSON.stringify(disabled));
  assertEquals((await overview(svc)).users, {
    total: 4,
    admins: 2,
    disabled: 1,
    unenrolledAdmins: 2,
  });
  // A disable that ran out no longer counts, before any sweep clears it.
  await svc.sql`
    update users set disabled_until = now() - interval '1 minute'
    where id = ${a.id}`;
  assertEquals((await overview(svc)).users.disabled, 0);
  // An admin with a factor is enrolled.
  await svc.sql`update users set mfa_enabled = true where role = 'admin'
    and username = 'overview-3'`;
  assertEquals((await overview(svc)).users.unenrolledAdmins, 1);
});

Deno.test("sign-ins: 14 UTC days, oldest first, today last, failed and succeeded as the trail has them", async () => {
  const svc = await service();
  const before = await overview(svc);
  assert(before.signIns);
  assertEquals(before.signIns.length, 14);
  assertEquals(before.signIns.at(-1)?.date, today());
  const first = new Date(Date.parse(`${today()}T00:00:00Z`) - 13 * 86_400_000);
  assertEquals(before.signIns[0].date, first.toISOString().slice(0, 10));

  const user = await create(svc, "viewer");
  const other = svc.client();
  assertEquals(
    await other.login(user.username, "not the password"),
    { ok: false, status: 401, error: "Invalid username or password" },
  );
  assert((await other.login(user.username, "overview-password-" + made)).ok);
  assert((await svc.client().login(user.username, "wrong again")).ok === false);

  const after = await overview(svc);
  assert(after.signIns);
  const [was, now] = [before.signIns.at(-1)!, after.signIns.at(-1)!];
  assertEquals(now.succeeded - was.succeeded, 1);
  assertEquals(now.failed - was.failed, 2);
  // The same numbers as the trail's own records of today.
  for (
    const [action, count] of [["login.succeeded", now.succeeded], [
      "login.failed",
      now.failed,
    ]] as const
  ) {
    const listed = await svc.admin.get("/api/audit", {
      params: { query: { action, since: today(), limit: 1000 } },
    });
    assert(listed.ok);
    assertEquals(listed.data.length, count, action);
  }
  // An earlier day's records fall on their day; older than 14 days on none.
  await svc.sql`
    update audit_events set time = now() - interval '3 days'
    where id = (select max(id) from audit_events where action = 'login.failed')`;
  await svc.sql`
    update audit_events set time = now() - interval '20 days'
    where id = (select min(id) from audit_events where action = 'login.failed')`;
  const moved = await overview(svc);
  assert(moved.signIns);
  const threeAgo = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(
    0,
    10,
  );
  assertEquals(moved.signIns.at(-1)!.failed, now.failed - 2);
  assertEquals(
    moved.signIns.find((d) => d.date === threeAgo)!.failed -
      after.signIns.find((d) => d.date === threeAgo)!.failed,
    1,
  );
  assertEquals(
    moved.signIns.reduce((n, d) => n + d.failed, 0),
    after.signIns.reduce((n, d) => n + d.failed, 0) - 1,
  );
});

Deno.test("webhook health: idle before any attempt, ok after a delivery, failing after a failure, disabled once given up", async () => {
  const svc = await service();
  assertEquals((await overview(svc)).webhooks, []);
  const hook = await svc.admin.post("/api/webhooks", {
    // An action that never comes here: no delivery is attempted.
    body: { url: "https://hooks.example/in", actions: ["import.finished"] },
  });
  assert(hook.ok, JSON.stringify(hook));
  const id = hook.data.id;
  assertEquals((await overview(svc)).webhooks, [
    {
      id,
      url: "https://hooks.example/in",
      health: "idle",
      lastAttemptAt: null,
    },
  ]);
  const attempt = async (outcome: "delivered" | "failed") => {
    const [row] = await svc.sql<{ at: Date }[]>`
      insert into webhook_attempts (endpoint_id, record_id, attempt, outcome,
        duration_ms)
      values (${id}, 1, 1, ${outcome}, 5) returning at`;
    return row.at.toISOString();
  };
  const delivered = await attempt("delivered");
  assertEquals((await overview(svc)).webhooks, [
    {
      id,
      url: "https://hooks.example/in",
      health: "ok",
      lastAttemptAt: delivered,
    },
  ]);
  const failed = await attempt("failed");
  await svc.sql`update webhook_endpoints set failures = 1,
    failing_since = now() where id = ${id}`;
  assertEquals((await overview(svc)).webhooks?.[0].health, "failing");
  assertEquals((await overview(svc)).webhooks?.[0].lastAttemptAt, failed);
  await svc.sql`update webhook_endpoints set disabled_at = now()
    where id = ${id}`;
  assertEquals((await overview(svc)).webhooks?.[0].health, "disabled");
});

Deno.test("a section the caller may not read is null; without users:read the overview is refused", async () => {
  const svc = await service();
  const role = await svc.admin.post("/api/roles", {
    body: { name: "Desk", permissions: ["users:read"] },
  });
  assert(role.ok, JSON.stringify(role));
  const desk = await svc.userClient("viewer");
  const assigned = await svc.admin.post("/api/assignments", {
    body: { roleId: role.data.id, userId: desk.account.id },
  });
  assert(assigned.ok, JSON.stringify(assigned));
  const read = await desk.client.get("/api/overview");
  assert(read.ok, JSON.stringify(read));
  assertEquals(read.data.signIns, null);
  assertEquals(read.data.webhooks, null);
  assertEquals(read.data.users.total, 2);

  // With audit:read too, the sign-ins; webhooks still need webhooks:manage.
  const patched = await svc.admin.patch("/api/roles/{id}", {
    params: { path: { id: role.data.id } },
    body: { permissions: ["users:read", "audit:read"] },
  });
  assert(patched.ok, JSON.stringify(patched));
  const more = await desk.client.get("/api/overview");
  assert(more.ok);
  assertEquals(more.data.signIns?.length, 14);
  assertEquals(more.data.webhooks, null);

  const viewer = await svc.userClient("viewer");
  const refused = await viewer.client.get("/api/overview");
  assertEquals(
    {
      ok: refused.ok,
      status: refused.status,
      error: (refused as { error?: string }).error,
    },
    { ok: false, status: 403, error: "Forbidden" },
  );
  const anonymous = await svc.client().get("/api/overview");
  assertEquals(
    {
      status: anonymous.status,
      error: (anonymous as { error?: string }).error,
    },
    { status: 401, error: "Unauthorised" },
  );
});
