import type { Sql, TransactionSql } from "postgres";

/** Any 64-bit number of our own: the lock that serialises concurrent startups. */
export const MIGRATION_LOCK = 7_304_118_205_911n;

export interface Migration {
  version: number;
  name: string;
  /** Runs inside the migration transaction. */
  run(tx: TransactionSql): Promise<unknown>;
}

/**
 * The numbered files beside this module, in order: `.sql` run as written,
 * `.ts` modules whose default export gets the transaction (for a step that
 * needs the service's own code, such as computing canonical keys).
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
    if (match[2] === "sql") {
      // A migration file is trusted code of ours, run as written.
      const text = await Deno.readTextFile(url);
      run = (tx) => tx.unsafe(text);
    } else {
      run = (await import(url.href)).default;
    }
    migrations.push({ version: Number(match[1]), name: entry.name, run });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

/**
 * Applies the migrations not yet applied, each in the one transaction that
 * holds the advisory lock, so instances starting together apply each once.
 * Returns the names applied by this call.
 */
export async function migrate(
  sql: Sql,
  migrations: Migration[],
): Promise<string[]> {
  return await sql.begin(async (tx) => {
    // Waiting for another instance's migration, or a long one, is no request:
    // the connection's statement_timeout does not apply here.
    await tx`set local statement_timeout = 0`;
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK.toString()}::bigint)`;
    await tx`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
    const rows = await tx<
      { version: number }[]
    >`select version from schema_migrations`;
    const done = new Set(rows.map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await m.run(tx);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.name);
    }
    return applied;
  });
}
