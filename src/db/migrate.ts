import type { Sql } from "postgres";

/** Any 64-bit number of our own: the lock that serialises concurrent startups. */
export const MIGRATION_LOCK = 7_304_118_205_911n;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The numbered .sql files beside this module, in order. */
export async function loadMigrations(
  dir = new URL("./migrations/", import.meta.url),
): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const match = /^(\d+)_.+\.sql$/.exec(entry.name);
    if (!entry.isFile || !match) continue;
    migrations.push({
      version: Number(match[1]),
      name: entry.name,
      sql: await Deno.readTextFile(new URL(entry.name, dir)),
    });
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
      // A migration file is trusted code of ours, run as written.
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.name);
    }
    return applied;
  });
}
