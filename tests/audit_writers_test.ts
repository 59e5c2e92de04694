/**
 * Writers of the trail: several at once keep one linear chain, and a record
 * commits or rolls back with the change it records, also when writing it
 * fails halfway.
 */
import postgres from "postgres";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { ensureFirstAdmin } from "../src/bootstrap.ts";
import { createStore } from "../src/db/store.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { createLogger } from "../src/log.ts";
import { isRefusal } from "../src/refusal.ts";
import { assert, assertEquals, assertRejects } from "./support/assert.ts";
import { createAdmin } from "../src/cli/create-admin.ts";
import { postgresOnly } from "./support/conditions.ts";
import { runTask } from "./support/process.ts";
import {
  ADMIN,
  loginCookie,
  ON_EMBEDDED,
  startService,
} from "./support/service.ts";
import { auditEvents } from "../src/audit/events.ts";
import {
  auditDatabase,
  FAIL_AUDIT,
  HEAL_AUDIT,
  recordAudit,
  verifyTask,
  writeRecords,
} from "./audit_support.ts";

const USERNAMES = 60;
const WRITERS = 3;

Deno.test("three writers on separate pools creating the same users at once leave one gapless chain that verifies", async () => {
  await using a = await auditDatabase();
  // Three pools of four connections each, as three instances would hold; on
  // the embedded database (one process, one connection) three stores on it.
  const pools = ON_EMBEDDED ? [] : Array.from(
    { length: WRITERS },
    () => postgres(a.env.DATABASE_URL, { max: 4, onnotice: () => {} }),
  );
  try {
    const stores = ON_EMBEDDED
      ? Array.from({ length: WRITERS }, () => a.store)
      : pools.map((p) => createStore(p));
    // Each writer tries every username: one creation each succeeds with its
    // record; the duplicates roll back and leave none.
    const outcomes = await Promise.all(
      stores.map((store, w) =>
        Promise.all(Array.from({ length: USERNAMES }, (_, i) => {
          const n = (i + w * 20) % USERNAMES;
          return store.users.createFirst(
            {
              username: `writer${n}`,
              name: "Writer",
              email: `writer${n}@example.com`,
              role: "admin",
              passwordHash: "not a real hash: never logged in",
            },
            "environment",
            NO_DEADLINE,
          );
        }))
      ),
    );
    const created = outcomes.flat().flatMap((o) => isRefusal(o) ? [] : [o]);
    assertEquals(created.length, USERNAMES);
    // Each writer seals what it wrote, as an instance does when it stops.
    await Promise.all(stores.map((store) => store.stop()));
    const rows = await a.db.sql<{ id: string; target_id: number }[]>`
      select id::text as id, target_id from audit_events order by audit_events.id`;
    assertEquals(
      rows.map((r) => Number(r.id)),
      Array.from({ length: USERNAMES }, (_, i) => i + 1),
    );
    assertEquals(
      new Set(rows.map((r) => r.target_id)),
      new Set(created.map((u) => u.id)),
    );
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assert(
    run.stdout.startsWith(`Audit trail intact: ${USERNAMES} records`),
    run.stdout,
  );
});

Deno.test({
  // The embedded database has one connection: no two transactions interleave.
  ...postgresOnly(
    "a record written in a REPEATABLE READ transaction is sealed after a newer one; a seal in one that missed a newer seal fails to serialise instead of forking the chain",
  ),
  async fn() {
    await using a = await auditDatabase();
    await writeRecords(a.store, 3);
    const other = postgres(a.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    const late = (n: number) =>
      auditEvents.logout({ id: 1, username: `late${n}` }, {
        requestId: `late${n}`,
        clientAddress: null,
        via: "api",
      });
    try {
      // A writer never reads the chain: its snapshot does not matter.
      await other.begin("isolation level repeatable read", async (tx) => {
        await tx`select 1`; // the snapshot: three records
        await writeRecords(a.store, 1, 3); // a fourth is sealed meanwhile
        await recordAudit(tx, late(5));
      });
      await a.store.audit.seal();
      // A seal reads the head: from an old snapshot it must not append.
      const failure = await other.begin(
        "isolation level repeatable read",
        async (tx) => {
          await tx`select 1`; // the snapshot: five records
          await writeRecords(a.store, 1, 5); // a sixth is sealed meanwhile
          await recordAudit(tx, late(7));
          await tx`select audit_seal(1000)`;
        },
      ).then(() => undefined, (e) => e);
      assertEquals((failure as { code?: string })?.code, "40001");
    } finally {
      await other.end();
    }
    const records = await a.store.audit.list({ limit: 10 });
    assertEquals(
      records.map((r) => [r.id, r.requestId]),
      [[6, "test-5"], [5, "late5"], [4, "test-3"], [3, "test-2"], [
        2,
        "test-1",
      ], [1, "test-0"]],
    );
    await a.close();
    const run = await verifyTask(a.env);
    assertEquals(run.code, 0, run.stderr);
    assertEquals(run.stdout.split(",")[0], "Audit trail intact: 6 records");
  },
});

Deno.test("a failing audit insert fails the logout with its 500 and keeps the session; then logout is recorded", async () => {
  await using svc = await startService();
  const cookie = await loginCookie(svc);
  await svc.sql.unsafe(FAIL_AUDIT);
  const failed = await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { cookie },
  });
  assertEquals(failed.status, 500);
  assertEquals(await failed.json(), { error: "Internal server error" });
  const me = await svc.fetch("/api/auth/me", { headers: { cookie } });
  assertEquals(me.status, 200);
  await me.body?.cancel();
  await svc.sql.unsafe(HEAL_AUDIT);

  // The first admin, the harness's login and this test's: no logout.
  const before = await svc.store.audit.list({ limit: 100 });
  assertEquals(before.map((r) => r.action), [
    "login.succeeded",
    "login.succeeded",
    "admin.bootstrapped",
  ]);
  const ok = await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { cookie },
  });
  assertEquals(ok.status, 200);
  await ok.body?.cancel();
  const [logout] = await svc.store.audit.list({ limit: 1 });
  assertEquals(logout, {
    id: 4,
    time: logout.time,
    action: "logout",
    actor: { id: svc.adminAccount.id, username: ADMIN.username },
    target: { id: svc.adminAccount.id, username: ADMIN.username },
    details: {},
    requestId: ok.headers.get("x-request-id"),
    clientAddress: "127.0.0.1",
    via: "api",
  });
  assert(logout.requestId !== null);
  // Its session is gone now; a logout without a session records nothing.
  const again = await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { cookie },
  });
  assertEquals(again.status, 200);
  await again.body?.cancel();
  assertEquals((await svc.store.audit.list({ limit: 100 })).length, 4);
});

Deno.test("the first admin is created with its record or not at all", async () => {
  await using a = await auditDatabase();
  const passwords = createPasswordHasher(10);
  const log = createLogger("silent");
  const config = { ADMIN_USERNAME: "root", ADMIN_PASSWORD: "root-pass-1234" };
  await a.db.sql.unsafe(FAIL_AUDIT);
  await assertRejects(
    () => ensureFirstAdmin(a.store, passwords, config, log),
    Error,
    "injected audit_failure",
    "startup fails when its record cannot be written",
  );
  assertEquals(await a.store.users.count(), 0);
  await a.db.sql.unsafe(HEAL_AUDIT);

  await ensureFirstAdmin(a.store, passwords, config, log);
  // A second start finds the user and writes nothing.
  await ensureFirstAdmin(a.store, passwords, config, log);
  const records = await a.store.audit.list({ limit: 10 });
  const root = await a.store.users.findForLogin("root");
  assertEquals(records, [{
    id: 1,
    time: records[0].time,
    action: "admin.bootstrapped",
    actor: null,
    target: { id: root!.id, username: "root" },
    details: { source: "environment" },
    requestId: null,
    clientAddress: null,
    via: null,
  }]);
});

Deno.test("a generated first admin is recorded as such", async () => {
  await using a = await auditDatabase();
  const log = createLogger("silent");
  const stderr = console.error;
  console.error = () => {}; // the printed password
  try {
    await ensureFirstAdmin(a.store, createPasswordHasher(10), {}, log);
  } finally {
    console.error = stderr;
  }
  const [record] = await a.store.audit.list({ limit: 10 });
  assertEquals(
    [record.action, record.target?.username, record.details],
    ["admin.bootstrapped", "admin", { source: "generated" }],
  );
});

Deno.test("the recovery task's change is recorded with it, or neither happens", async () => {
  await using a = await auditDatabase();
  await a.db.sql.unsafe(FAIL_AUDIT);
  await assertRejects(
    () =>
      a.store.users.upsertAdmin({
        username: "rescuer",
        name: "R",
        email: "r@example.com",
        passwordHash: "x",
      }, NO_DEADLINE),
    Error,
    "injected audit_failure",
  );
  assertEquals(await a.store.users.count(), 0);
  await a.db.sql.unsafe(HEAL_AUDIT);
  await a.close();

  const created = await cli(a.env, ["--username", "rescuer"]);
  assertEquals(created.code, 0, created.stderr);
  const reset = await cli(a.env, [
    "--username",
    "RESCUER",
    "--password",
    "another-pass-1",
  ]);
  assertEquals(reset.code, 0, reset.stderr);
  await a.reopen();
  const records = await a.store.audit.list({ limit: 10 });
  const id = (await a.store.users.findForLogin("rescuer"))!.id;
  assertEquals(
    records.map((
      r,
    ) => [
      r.action,
      r.actor,
      r.target,
      r.details,
      r.requestId,
      r.clientAddress,
    ]),
    [
      [
        "admin.recovered",
        null,
        { id, username: "rescuer" },
        { outcome: "reset" },
        null,
        null,
      ],
      [
        "admin.recovered",
        null,
        { id, username: "rescuer" },
        { outcome: "created" },
        null,
        null,
      ],
    ],
  );
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
});

const cli = (env: Record<string, string>, args: string[]) =>
  runTask(createAdmin, args, env);
