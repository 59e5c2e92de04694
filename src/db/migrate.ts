import type { Sql, TransactionSql } from "postgres";

/** Any 64-bit number of our own: the lock that serialises concurrent startups. */
export const MIGRATION_LOCK = 7_304_118_205_911n;

/**
 * Held, at session level, by the one instance running a migration outside a
 * transaction (`transaction = false`); another number than MIGRATION_LOCK,
 * which instances of earlier releases wait for inside a transaction.
 */
export const ALONE_LOCK = 7_304_118_205_912n;

/** How often an instance asks for ALONE_LOCK while another holds it. */
const ALONE_POLL_MS = 100;

export interface Migration {
  version: number;
  name: string;
  /**
   * True: runs inside the migration transaction. False: runs alone, outside
   * any transaction, on one connection (for what a transaction refuses, such
   * as CREATE INDEX CONCURRENTLY); it is recorded once it returns, so it
   * must be able to run again after failing halfway.
   */
  transaction: boolean;
  /**
   * Gets the transaction, or (outside one) the session's connection; and
   * whether it runs inside the migration transaction, which one declared
   * to run outside does behind transaction pooling (`MigrateOptions`).
   */
  run(
    tx: TransactionSql,
    context: { inTransaction: boolean },
  ): Promise<unknown>;
}

export interface MigrateOptions {
  /**
   * False behind a pooler that may hand each transaction another server
   * session (PgBouncer's transaction pooling): a session-level lock or
   * setting would not hold there. Migrations declared to run outside a
   * transaction then run inside the migration transaction like the others,
   * told so (an index is then built plainly, blocking writes to its table
   * while it builds).
   */
  sessions?: boolean;
}

/**
 * The numbered files beside this module, in order: `.sql` run as written,
 * `.ts` modules whose default export gets the transaction (for a step that
 * needs the service's own code, such as computing canonical keys). A `.ts`
 * module that exports `transaction = false` runs outside a transaction.
 */
export async function loadMigrations(
  dir = new URL("./migrations/", import.meta.url),
): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const match = /^(\d+)_.+\.(sql|ts)$/.exec(entry.name);
    if (!entry.isFile || !match) continue;
    const url = new URL(entry.name, dir);
    let run: Migration["run"];
    let transaction = true;
    if (match[2] === "sql") {
      // A migration file is trusted code of ours, run as written.
      const text = await Deno.readTextFile(url);
      run = (tx) => tx.unsafe(text);
    } else {
      const module = await import(url.href);
      run = module.default;
      transaction = module.transaction !== false;
    }
    migrations.push({
      version: Number(match[1]),
      name: entry.name,
      transaction,
      run,
    });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

/**
 * Applies the migrations not yet applied, in order, so instances starting
 * together apply each once. Returns the names applied by this call.
 *
 * Migrations in a transaction run as they always did: every one pending up
 * to the next that runs outside a transaction, in one transaction holding
 * MIGRATION_LOCK (so each such run applies all of them or none). One that
 * runs outside a transaction runs alone under ALONE_LOCK (`runAlone`), after
 * which the next run of transactions begins. Nobody applies a migration past
 * one not yet recorded. Without session state (`sessions: false`) every
 * migration runs in the transaction.
 */
export async function migrate(
  sql: Sql,
  migrations: Migration[],
  { sessions = true }: MigrateOptions = {},
): Promise<string[]> {
  const applied: string[] = [];
  for (;;) {
    const step = await sql.begin(async (tx) => {
      // Waiting for another instance's migration, or a long one, is no request:
      // the connection's statement_timeout does not apply here.
      await tx`set local statement_timeout = 0`;
      // Deferred triggers (the list's version, 017) fire at each statement:
      // a migration that writes rows and then alters or indexes the table
      // would otherwise fail on the events still pending.
      await tx`set constraints all immediate`;
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint)`;
      await tx`
        create table if not exists schema_migrations (
          version integer primary key,
          name text not null,
          applied_at timestamptz not null default now()
        )`;
      const done = await appliedVersions(tx);
      const names: string[] = [];
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        if (!m.transaction && sessions) return { names, alone: m };
        await m.run(tx, { inTransaction: true });
        await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
        names.push(m.name);
      }
      return { names, alone: undefined };
    });
    applied.push(...step.names);
    if (!step.alone) return applied;
    if (await runAlone(sql, step.alone)) applied.push(step.alone.name);
  }
}

async function appliedVersions(q: Sql | TransactionSql) {
  const rows = await q<{ version: number }[]>`
    select version from schema_migrations`;
  return new Set(rows.map((r) => r.version));
}

/**
 * Runs a migration outside any transaction on one connection of its own,
 * holding ALONE_LOCK (session level) so that one instance runs it at a
 * time; false when another instance applied it meanwhile.
 *
 * The lock is asked for again and again (pg_try_advisory_lock), never
 * waited for in a statement: a waiting statement holds a snapshot, and
 * CREATE INDEX CONCURRENTLY waits for every transaction with an older
 * snapshot, so the builder would wait for the waiter that waits for it.
 * MIGRATION_LOCK is not held meanwhile: instances of this release and of
 * earlier ones take it for short transactions only, which the build waits
 * out, instead of waiting for the build while holding a snapshot.
 */
async function runAlone(sql: Sql, m: Migration): Promise<boolean> {
  const session = await sql.reserve();
  try {
    await session`set statement_timeout = 0`;
    const lock = ALONE_LOCK.toString();
    while (
      !(await session<{ locked: boolean }[]>`
        select pg_try_advisory_lock(${lock}::bigint) as locked`)[0].locked
    ) {
      await new Promise((r) => setTimeout(r, ALONE_POLL_MS));
    }
    try {
      if ((await appliedVersions(session)).has(m.version)) return false;
      await m.run(session as unknown as TransactionSql, {
        inTransaction: false,
      });
      await session`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      return true;
    } finally {
      await session`select pg_advisory_unlock(${lock}::bigint)`
        .catch(() => {/* the connection is gone, and its lock with it */});
    }
  } finally {
    // Back to the connection's own statement timeout before the pool reuses it.
    await session`reset statement_timeout`.catch(() => {});
    session.release();
  }
}

/**
 * Builds an index: without blocking writes (CREATE INDEX CONCURRENTLY)
 * outside a transaction, plainly inside one. A valid index of that name
 * stays (a run that ended before recording its migration); an invalid one,
 * left by a concurrent build that failed halfway, is dropped and built
 * again: `if not exists` would keep it, unused by every query and still
 * paid for by every write. `on` is the table and columns as CREATE INDEX
 * writes them, our own text.
 */
export async function buildIndex(
  sql: Sql | TransactionSql,
  name: string,
  on: string,
  { inTransaction }: { inTransaction: boolean },
): Promise<void> {
  const [index] = await sql<{ valid: boolean }[]>`
    select i.indisvalid as valid
    from pg_index i join pg_class c on c.oid = i.indexrelid
    where c.relname = ${name} and c.relnamespace = current_schema()::regnamespace`;
  if (index?.valid) return;
  const concurrently = inTransaction ? "" : "concurrently";
  if (index) await sql.unsafe(`drop index ${concurrently} if exists ${name}`);
  await sql.unsafe(`create index ${concurrently} ${name} on ${on}`);
}
