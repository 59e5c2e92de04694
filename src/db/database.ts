import postgres, { type Sql } from "postgres";
import type { Config } from "../config.ts";
import { loadMigrations, migrate } from "./migrate.ts";

export interface Database {
  sql: Sql;
  /** Where it lives, for the startup log: never a password. */
  describe: string;
  close(): Promise<void>;
}

type DatabaseConfig = Pick<
  Config,
  "DATABASE_URL" | "DATA_DIR" | "DATABASE_POOL_MAX" | "DATABASE_PREPARE"
>;

/** postgres.js with bounds, so a database that went away fails fast instead of hanging. */
export function connect(
  url: string,
  options: { max: number; prepare: boolean },
): Sql {
  return postgres(url, {
    max: options.max,
    prepare: options.prepare,
    connect_timeout: 3,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    onnotice: () => {},
    connection: { application_name: "user-admin" },
  });
}

/**
 * PostgreSQL at DATABASE_URL, or the embedded one in DATA_DIR; migrated,
 * either way, before it is handed out.
 */
export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  const migrations = await loadMigrations();
  if (config.DATABASE_URL) {
    const sql = connect(config.DATABASE_URL, {
      max: config.DATABASE_POOL_MAX,
      prepare: config.DATABASE_PREPARE,
    });
    try {
      await migrate(sql, migrations);
    } catch (e) {
      await sql.end({ timeout: 1 });
      throw e;
    }
    const url = new URL(config.DATABASE_URL);
    return {
      sql,
      describe: `postgresql://${url.host}${url.pathname}`,
      close: () => sql.end({ timeout: 5 }),
    };
  }
  // Loaded only when used: PGlite is a large module an instance on a
  // PostgreSQL server would otherwise carry in its heap for nothing.
  const { startEmbeddedPostgres } = await import("./embedded.ts");
  const embedded = await startEmbeddedPostgres(config.DATA_DIR);
  // One connection: PGlite is a single backend.
  const sql = connect(embedded.url, { max: 1, prepare: true });
  try {
    await migrate(sql, migrations);
  } catch (e) {
    await sql.end({ timeout: 1 });
    await embedded.close();
    throw e;
  }
  return {
    sql,
    describe: `embedded PGlite in ${config.DATA_DIR}`,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded.close();
    },
  };
}
