/**
 * Migrations outside a transaction (src/db/migrate.ts): run once however
 * many instances start, never waited for while holding a snapshot, and a
 * concurrent index build that failed halfway is built again.
 */
import postgres, { type Sql } from "postgres";
import { connect } from "../src/db/database.ts";
import {
  loadMigrations,
  migrate,
  type Migration,
  MIGRATION_LOCK,
} from "../src/db/migrate.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { migratedDatabaseUrl } from "./support/service.ts";

/** A migrated database of the test's own and one connection to it. */
async function migratedDatabase() {
  const database = await migratedDatabaseUrl();
  const sql = connect(database.url, { max: 1, prepare: true, recycle: false });
  return {
    url: database.url,
    sql,
    async [Symbol.asyncDispose]() {
      await sql.end();
      await database[Symbol.asyncDispose]();
    },
  };
}

const INDEX = "users_role_created_at_id";

const validity = async (sql: Sql) =>
  (await sql<{ valid: boolean }[]>`
    select i.indisvalid as valid from pg_index i
    where i.indexrelid = ${INDEX}::regclass`).map((r) => r.valid);

Deno.test("an index a failed concurrent build left invalid is dropped and built again, and its migration recorded once", async () => {
  await using db = await migratedDatabase();
  const { sql } = db;
  // As a CREATE INDEX CONCURRENTLY that failed halfway leaves it: in the
  // catalog, invalid, its migration not recorded.
  await sql`update pg_index set indisvalid = false where indexrelid = ${INDEX}::regclass`;
  await sql`delete from schema_migrations where version = 10`;
  assertEquals(await validity(sql), [false]);

  const migrations = await loadMigrations();
  assertEquals(await migrate(sql, migrations), ["010_filter_indexes.ts"]);
  assertEquals(await validity(sql), [true]);
  assertEquals(await migrate(sql, migrations), []);
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from schema_migrations where version = 10`;
  assertEquals(n, 1);
});

Deno.test({
  ...postgresOnly(
    "a migration outside a transaction runs once while a second instance waits for it without a snapshot and an earlier release's instance starts meanwhile",
  ),
  async fn() {
    await using db = await migratedDatabase();
    const { promise: release, resolve: letFinish } = Promise.withResolvers<
      void
    >();
    const { promise: running, resolve: isRunning } = Promise.withResolvers<
      void
    >();
    let runs = 0;
    const alone: Migration = {
      version: 9_999,
      name: "9999_alone.ts",
      transaction: false,
      async run() {
        runs++;
        isRunning();
        await release;
      },
    };
    const migrations = [...await loadMigrations(), alone];
    const other = connect(db.url, { max: 2, prepare: true });
    const earlier = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      const first = migrate(db.sql, migrations);
      await running;
      const second = migrate(other, migrations);
      // Awaited below; a failure here ends the pools under them.
      first.catch(() => {});
      second.catch(() => {});
      // The second instance is waiting for the first's migration: over
      // several of its polls, none of its sessions holds a snapshot across
      // them (the same statement still running a moment later), which a
      // concurrent index build would wait for. A poll's own statement holds
      // one while it runs, which a loaded machine may catch once.
      const holders = async () =>
        new Map(
          (await earlier<{ pid: number; started: string }[]>`
            select pid, query_start::text as started from pg_stat_activity
            where datname = current_database()
              and backend_type = 'client backend'
              and backend_xmin is not null
              and pid <> pg_backend_pid()`).map((r) => [r.pid, r.started]),
        );
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      for (let i = 0; i < 5; i++) {
        const before = await holders();
        await sleep(60);
        const after = await holders();
        const held = [...before].filter(([pid, started]) =>
          after.get(pid) === started
        );
        assertEquals(held, [], "a waiting migrator holds a snapshot");
      }
      // An instance of an earlier release takes the migration lock in a
      // transaction and finds nothing to do: it does not wait for the build.
      await earlier.begin(async (tx) => {
        await tx`set local lock_timeout = '2s'`;
        await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint)`;
      });
      letFinish();
      assertEquals(await first, ["9999_alone.ts"]);
      assertEquals(await second, []);
      assertEquals(runs, 1);
    } finally {
      letFinish();
      // Not waiting for a migrator a failed assertion left waiting.
      await other.end({ timeout: 1 });
      await earlier.end({ timeout: 1 });
    }
  },
});

Deno.test("a failed migration outside a transaction is not recorded, and runs again at the next start", async () => {
  await using db = await migratedDatabase();
  let runs = 0;
  const failing: Migration = {
    version: 9_998,
    name: "9998_fails_once.ts",
    transaction: false,
    run() {
      if (++runs === 1) throw new Error("stopped halfway");
      return Promise.resolve();
    },
  };
  const migrations = [...await loadMigrations(), failing];
  let failed = false;
  await migrate(db.sql, migrations).catch(() => failed = true);
  assert(failed, "the first run's failure is thrown");
  assertEquals(await migrate(db.sql, migrations), ["9998_fails_once.ts"]);
  assertEquals(runs, 2);
});

Deno.test("without session state (behind transaction pooling) a migration declared outside a transaction runs in the migration transaction, its index built plainly", async () => {
  await using db = await migratedDatabase();
  const { sql } = db;
  await sql`drop index ${sql(INDEX)}`;
  await sql`delete from schema_migrations where version = 10`;
  let inTransaction: boolean | undefined;
  const probe: Migration = {
    version: 9_997,
    name: "9997_probe.ts",
    transaction: false,
    async run(tx, context) {
      inTransaction = context.inTransaction;
      // A transaction's own id stays the same over its statements.
      const [a] = await tx`select txid_current() as id`;
      const [b] = await tx`select txid_current() as id`;
      assertEquals(a.id, b.id);
    },
  };
  const migrations = [...await loadMigrations(), probe];
  assertEquals(await migrate(sql, migrations, { sessions: false }), [
    "010_filter_indexes.ts",
    "9997_probe.ts",
  ]);
  assertEquals(inTransaction, true);
  assertEquals(await validity(sql), [true]);
});
