/**
 * Retention: the sweep removes the records older than AUDIT_RETENTION_DAYS,
 * always the oldest, and the chain still verifies from the oldest kept,
 * whose removal is then detected like any other.
 */
import { loadConfig } from "../src/config.ts";
import { startHousekeeping } from "../src/housekeeping.ts";
import { createLogger } from "../src/log.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { auditDatabase, verifyTask, writeRecords } from "./audit_support.ts";
import { sleep } from "./support/process.ts";

type Audit = Awaited<ReturnType<typeof auditDatabase>>;

/** Milliseconds between the older and the newer records of `oldAndNew`. */
const GAP_MS = 300;

/** 6 records, then 4 more GAP_MS later. */
async function oldAndNew(a: Audit) {
  await writeRecords(a.store, 6);
  await sleep(GAP_MS);
  await writeRecords(a.store, 4, 6);
}

/**
 * A retention in days whose cutoff, for a sweep made right after, falls
 * just after record `id`'s time by the database's clock: that record and
 * the older ones are older than it, the newer ones (GAP_MS later) are not,
 * as long as the sweep starts within GAP_MS of this call. Relative to the
 * records' own times, so a slow machine changes nothing. Waits until the
 * record is a few milliseconds old (its time is kept to the millisecond).
 */
async function retentionAfter(a: Audit, id: number): Promise<number> {
  for (;;) {
    const [{ age }] = await a.db.sql<{ age: number }[]>`
      select extract(epoch from now() - time)::float8 as age
      from audit_events where id = ${id}`;
    if (age > 0.01) return (age - 0.005) / 86_400;
    await sleep(10);
  }
}

Deno.test("AUDIT_RETENTION_DAYS defaults to 365; 0 keeps all; a negative value is refused", () => {
  assertEquals(loadConfig({}).AUDIT_RETENTION_DAYS, 365);
  assertEquals(
    loadConfig({ AUDIT_RETENTION_DAYS: "0" }).AUDIT_RETENTION_DAYS,
    0,
  );
  let refused = false;
  try {
    loadConfig({ AUDIT_RETENTION_DAYS: "-1" });
  } catch (e) {
    refused = /AUDIT_RETENTION_DAYS/.test((e as Error).message);
  }
  assert(refused);
});

Deno.test("the sweep removes the older records and the chain verifies from the oldest kept, also after new records", async () => {
  await using a = await auditDatabase();
  await oldAndNew(a);
  // In batches of 4: several statements, each moving the anchor.
  assertEquals(await a.store.audit.sweep(await retentionAfter(a, 6), 4), 6);
  const kept = await a.store.audit.list({ limit: 100 });
  assertEquals(kept.map((r) => r.id), [10, 9, 8, 7]);
  await writeRecords(a.store, 3, 10);
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertMatch(run.stdout, /^Audit trail intact: 7 records, head #13 /);
});

Deno.test("after a sweep, removing the oldest kept record is detected", async () => {
  await using a = await auditDatabase();
  await oldAndNew(a);
  assertEquals(await a.store.audit.sweep(await retentionAfter(a, 6)), 6);
  await a.db.sql`delete from audit_events where id = 7`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertEquals(
    run.stderr.trim(),
    "Audit trail broken after 0 good records: record #7 was removed",
  );
});

Deno.test("after a sweep, a forged oldest record in place of the kept one is detected", async () => {
  await using a = await auditDatabase();
  await oldAndNew(a);
  assertEquals(await a.store.audit.sweep(await retentionAfter(a, 6)), 6);
  // The oldest kept record claims another predecessor than the anchor.
  await a.db.sql`
    update audit_events set prev_hash = decode(repeat('00', 32), 'hex') where id = 7`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertMatch(run.stderr, /: record #7 was altered$/m);
});

Deno.test("a retention of 0 keeps everything; a sweep of all leaves an empty trail that verifies and grows", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 5);
  assertEquals(await a.store.audit.sweep(0), 0);
  const all = await retentionAfter(a, 5);
  assertEquals(await a.store.audit.sweep(all), 5);
  assertEquals(await a.store.audit.sweep(all), 0);
  await a.close();
  let run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertEquals(run.stdout.trim(), "Audit trail intact: 0 records");
  await a.reopen();
  await writeRecords(a.store, 2, 5);
  await a.close();
  run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertMatch(run.stdout, /^Audit trail intact: 2 records, head #7 /);
});

Deno.test("housekeeping sweeps the trail with AUDIT_RETENTION_DAYS", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 3);
  const logs: Record<string, unknown>[] = [];
  const log = createLogger("info", (line) => logs.push(JSON.parse(line)));
  // 0 keeps all: nothing removed, nothing logged, through two whole sweeps
  // (seen completing, not guessed from a sleep).
  const swept: number[] = [];
  const watched = {
    ...a.store,
    audit: {
      ...a.store.audit,
      sweep: async (...args: Parameters<typeof a.store.audit.sweep>) => {
        const removed = await a.store.audit.sweep(...args);
        swept.push(removed);
        return removed;
      },
    },
  };
  let housekeeping = startHousekeeping(
    watched,
    {
      LOGIN_WINDOW_SECONDS: 900,
      AUDIT_RETENTION_DAYS: 0,
      HOUSEKEEPING_INTERVAL_MS: 50,
    },
    log,
  );
  try {
    for (let i = 0; i < 200 && swept.length < 2; i++) await sleep(50);
  } finally {
    await housekeeping.stop();
  }
  assert(swept.length >= 2, `${swept.length} sweeps completed in 10 s`);
  assertEquals(swept.filter((n) => n !== 0), []);
  assertEquals((await a.store.audit.list({ limit: 10 })).length, 3);
  assertEquals(logs, []);
  // A retention shorter than the records' age removes them.
  housekeeping = startHousekeeping(
    a.store,
    {
      LOGIN_WINDOW_SECONDS: 900,
      AUDIT_RETENTION_DAYS: await retentionAfter(a, 3),
      HOUSEKEEPING_INTERVAL_MS: 50,
    },
    log,
  );
  try {
    for (let i = 0; i < 100; i++) {
      if (logs.some((l) => l.expiredAuditRecords === 3)) break;
      await sleep(50);
    }
  } finally {
    await housekeeping.stop();
  }
  assertEquals((await a.store.audit.list({ limit: 10 })).length, 0);
  assert(logs.some((l) => l.expiredAuditRecords === 3), JSON.stringify(logs));
});
