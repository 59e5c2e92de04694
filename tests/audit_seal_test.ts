/**
 * Sealing: a write adds its record to audit_pending in its own transaction,
 * and a seal moves what is pending into the chain after the commit. A seal
 * that fails does not undo the change; what it left, and what a process that
 * ended before its seal left, the next seal takes, in batches.
 */
import postgres from "postgres";
import { canonicalTail } from "../src/audit/chain.ts";
import { auditEvents } from "../src/audit/events.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { startService } from "./support/service.ts";
import { postgresOnly } from "./support/conditions.ts";
import {
  auditDatabase,
  FAIL_SEAL,
  HEAL_SEAL,
  recordAudit,
  verifyTask,
} from "./audit_support.ts";
import { sleep } from "./support/process.ts";

Deno.test("a seal that fails keeps the change and its record: the write succeeds, the failure is logged, and the next seal puts the record in the chain", async () => {
  await using svc = await startService();
  const { account } = await svc.userClient("viewer");
  const path = { params: { path: { id: account.id } } };
  await svc.store.audit.seal();
  const [{ head }] = await svc.sql<{ head: string }[]>`
    select head_id::text as head from audit_chain`;
  await svc.sql.unsafe(FAIL_SEAL);
  try {
    const promoted = await svc.admin.patch("/api/users/{id}", {
      ...path,
      body: { role: "admin" },
    });
    assertEquals([promoted.status, promoted.ok && promoted.data.role], [
      200,
      "admin",
    ]);
    // The seal that follows on its own fails, and says so.
    let logged: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !logged; i++) {
      await sleep(20);
      logged = svc.logs.find((l) =>
        l.msg === "audit records left to the next seal"
      );
    }
    assert(logged, "the failed seal is logged");
    assertEquals(logged.level, "error");
    assertMatch(JSON.stringify(logged.cause), /injected seal_failure/);
    const pending = await svc.sql<{ tail: string }[]>`
      select tail from audit_pending`;
    assertEquals(pending.length, 1);
    assertMatch(pending[0].tail, /^"user\.role_changed",/);
    // A read of the trail seals first: while sealing fails, it fails.
    const read = await svc.admin.get("/api/audit", {});
    assertEquals([read.status, read.ok ? "" : read.error], [
      500,
      "Failed to list audit events",
    ]);
    const [{ role }] = await svc.sql<{ role: string }[]>`
      select role from users where id = ${account.id}`;
    assertEquals(role, "admin");
  } finally {
    await svc.sql.unsafe(HEAL_SEAL);
  }
  const read = await svc.admin.get("/api/audit", {
    params: { query: { limit: 1 } },
  });
  assert(read.ok);
  assertEquals(
    [read.data[0].id, read.data[0].action, read.data[0].details],
    [Number(head) + 1, "user.role_changed", { from: "viewer", to: "admin" }],
  );
  assertEquals(
    (await svc.sql`select 1 from audit_pending`).length,
    0,
  );
});

Deno.test("records that an ended process left unsealed are counted by verify, and the next read of the trail seals them all, over several batches", async () => {
  await using a = await auditDatabase();
  // Written as a writer writes them, by a process that never sealed: in a
  // transaction of the pool's own, with no seal after it.
  const total = 2_500;
  await a.db.sql.begin(async (tx) => {
    for (let i = 0; i < total; i++) {
      await recordAudit(
        tx,
        auditEvents.logout({ id: 1 + (i % 7), username: `left${i % 7}` }, {
          requestId: `left-${i}`,
          clientAddress: "192.0.2.9",
          via: "api",
        }),
      );
    }
  });
  await a.close();
  const before = await verifyTask(a.env);
  assertEquals(before.code, 0, before.stderr);
  assertEquals(
    before.stdout.trim(),
    `Audit trail intact: 0 records; ${total} more committed, not yet sealed into the chain`,
  );
  await a.reopen();
  const [newest] = await a.store.audit.list({ limit: 1 });
  assertEquals([newest.id, newest.requestId], [total, `left-${total - 1}`]);
  const oldest = await a.store.audit.list({ limit: 1, before: 2 });
  assertEquals(oldest.map((r) => r.requestId), ["left-0"]);
  await a.close();
  const after = await verifyTask(a.env);
  assertEquals(after.code, 0, after.stderr);
  assertMatch(
    after.stdout.trim(),
    new RegExp(
      `^Audit trail intact: ${total} records, head #${total} \\S+ \\w{64}$`,
    ),
  );
});

Deno.test("a store stopped right after a write has sealed its record", async () => {
  await using a = await auditDatabase();
  await a.store.audit.record(
    auditEvents.loginThrottled(undefined, 60, {
      requestId: "stop",
      clientAddress: "192.0.2.10",
      via: "api",
    }),
    NO_DEADLINE,
  );
  // Within the seal's delay: nothing has sealed it yet.
  assertEquals((await a.db.sql`select 1 from audit_events`).length, 0);
  await a.store.stop();
  const rows = await a.db.sql<{ request_id: string }[]>`
    select request_id from audit_events`;
  assertEquals(rows.map((r) => r.request_id), ["stop"]);
  assertEquals((await a.db.sql`select 1 from audit_pending`).length, 0);
});

Deno.test({
  // One connection on the embedded database: no two seals interleave.
  ...postgresOnly(
    "seals from several pools at once keep one chain: each record sealed once, in one order",
  ),
  async fn() {
    await using a = await auditDatabase();
    const pools = Array.from(
      { length: 3 },
      () => postgres(a.env.DATABASE_URL, { max: 2, onnotice: () => {} }),
    );
    try {
      // Records commit while every pool seals over and over.
      const writing = (async () => {
        for (let i = 0; i < 300; i++) {
          await a.store.audit.record(
            auditEvents.logout({ id: 1, username: "many" }, {
              requestId: `many-${i}`,
              clientAddress: null,
              via: "api",
            }),
            NO_DEADLINE,
          );
        }
      })();
      let done = false;
      const sealing = pools.map(async (sql) => {
        while (!done) await sql`select audit_seal(7)`;
      });
      await writing.finally(() => done = true);
      await Promise.all(sealing);
      await a.store.audit.seal();
      const ids = await a.db.sql<{ id: string; request_id: string }[]>`
        select id::text, request_id from audit_events order by audit_events.id`;
      assertEquals(
        ids.map((r) => Number(r.id)),
        [
          ...Array(300).keys(),
        ].map((i) => i + 1),
      );
      assertEquals(
        new Set(ids.map((r) => r.request_id)).size,
        300,
        "each record once",
      );
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    await a.close();
    const run = await verifyTask(a.env);
    assertEquals(run.code, 0, run.stderr);
    assertMatch(run.stdout, /^Audit trail intact: 300 records, /);
  },
});

Deno.test("audit_append, as a release before the seal calls it in its write's transaction: its record is in the chain when that commits, after the records pending before it; a rollback leaves both as they were", async () => {
  await using a = await auditDatabase();
  const event = (requestId: string) =>
    auditEvents.logout({ id: 1, username: "older" }, {
      requestId,
      clientAddress: "192.0.2.11",
      // The text a writer of a release before doors wrote too.
      via: null,
    });
  // A record a writer of this release committed and nothing sealed yet.
  await a.db.sql.begin((tx) => recordAudit(tx, event("pending")));
  const rolledBack = await a.db.sql.begin(async (tx) => {
    await tx`select audit_append(${canonicalTail(event("rolled-back"))})`;
    throw new Error("the write fails after its record");
  }).catch((e) => e);
  assertEquals(rolledBack.message, "the write fails after its record");
  assertEquals((await a.db.sql`select 1 from audit_events`).length, 0);
  assertEquals((await a.db.sql`select 1 from audit_pending`).length, 1);
  const [{ id }] = await a.db.sql.begin((tx) =>
    tx<{ id: string }[]>`
      select audit_append(${canonicalTail(event("appended"))})::text as id`
  );
  assertEquals(id, "2", "the chain's head: the appended record");
  const rows = await a.db.sql<{ id: string; request_id: string }[]>`
    select id::text, request_id from audit_events order by audit_events.id`;
  assertEquals(rows.map((r) => [r.id, r.request_id]), [
    ["1", "pending"],
    ["2", "appended"],
  ]);
  assertEquals((await a.db.sql`select 1 from audit_pending`).length, 0);
  // Records of this release's writers follow it in the same chain.
  await a.store.audit.record(event("after"), NO_DEADLINE);
  await a.store.audit.seal();
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertMatch(run.stdout, /^Audit trail intact: 3 records, head #3 /);
});
