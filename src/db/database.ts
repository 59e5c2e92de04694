import postgres, { type Sql } from "postgres";
import { type Config, StartupError, statementTimeoutMs } from "../config.ts";
import { loadMigrations, migrate } from "./migrate.ts";
import { MigrationConflict } from "./migrations/002_canonical_keys.ts";

export interface Database {
  sql: Sql;
  /** Where it lives, for the startup log: never a password. */
  describe: string;
  close(): Promise<void>;
}

type DatabaseConfig = Pick<
  Config,
  | "DATABASE_URL"
  | "DATA_DIR"
  | "DATABASE_POOL_MAX"
  | "DATABASE_PREPARE"
  | "REQUEST_TIMEOUT_MS"
>;

/**
 * postgres.js fetches the array types on every new connection without
 * awaiting the fetch anywhere: a connection terminated during it (a database
 * restarting, an operator's pg_terminate_backend) rejects a promise no one
 * holds, which would end the whole process. That one is expected and
 * harmless (the pool reconnects), so it is marked handled; any other
 * unhandled rejection still surfaces.
 */
let guarded = false;
function guardArrayTypeFetch() {
  if (guarded) return;
  guarded = true;
  globalThis.addEventListener("unhandledrejection", (e) => {
    const query = (e.reason as { query?: unknown } | null)?.query;
    if (
      typeof query === "string" && query.includes("from pg_catalog.pg_type a")
    ) {
      e.preventDefault();
    }
  });
}

/** postgres.js with bounds, so a database that went away fails fast instead of hanging. */
export function connect(
  url: string,
  options: {
    max: number;
    prepare: boolean;
    statementTimeoutMs?: number;
    recycle?: boolean;
  },
): Sql {
  guardArrayTypeFetch();
  return postgres(url, {
    max: options.max,
    prepare: options.prepare,
    connect_timeout: 3,
    // postgres.js waits up to 20 s between reconnects by default: a database
    // that is back would stay unused that long. At most a second, jittered.
    backoff: (retries: number) =>
      Math.min(2 ** retries / 20, 1) * (0.5 + Math.random() / 2),
    idle_timeout: options.recycle === false ? 0 : 60,
    max_lifetime: options.recycle === false ? null : 30 * 60,
    onnotice: () => {},
    connection: {
      application_name: "user-admin",
      // PGlite ignores it: a single backend has no lock to wait behind.
      ...(options.statementTimeoutMs
        ? { statement_timeout: options.statementTimeoutMs }
        : {}),
    },
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
      statementTimeoutMs: statementTimeoutMs(config),
    });
    const url = new URL(config.DATABASE_URL);
    try {
      // Without prepared statements, as behind PgBouncer's transaction
      // pooling, no session state holds: nothing runs outside a transaction.
      await migrate(sql, migrations, { sessions: config.DATABASE_PREPARE });
    } catch (e) {
      await sql.end({ timeout: 1 });
      throw startupFailure(e, url) ?? e;
    }
    return {
      sql,
      describe: describe(url),
      close: () => sql.end({ timeout: 5 }),
    };
  }
  // Loaded only when used: PGlite is a large module an instance on a
  // PostgreSQL server would otherwise carry in its heap for nothing.
  const { startEmbeddedPostgres } = await import("./embedded.ts");
  const embedded = await startEmbeddedPostgres(config.DATA_DIR);
  // One connection, kept: PGlite is a single backend session, which two
  // sockets would interleave, and where each reconnect would leave the old
  // connection's prepared statements behind.
  const sql = connect(embedded.url, { max: 1, prepare: true, recycle: false });
  try {
    await migrate(sql, migrations);
  } catch (e) {
    await sql.end({ timeout: 1 });
    await embedded.close();
    throw e instanceof MigrationConflict
      ? new StartupError(`DATA_DIR ${config.DATA_DIR}: ${e.message}`)
      : e;
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

/**
 * What an operator can fix about DATABASE_URL, as one line; undefined for
 * anything else (a bug, which keeps its stack).
 */
function startupFailure(e: unknown, url: URL): StartupError | undefined {
  const where = `${url.hostname}:${url.port || 5432}`;
  const database = decodeURIComponent(url.pathname.slice(1)) || url.username;
  const code = (e as { code?: string })?.code;
  const message = (e as Error)?.message;
  if (e instanceof MigrationConflict) {
    return new StartupError(`DATABASE_URL ${describe(url)}: ${message}`);
  }
  switch (code) {
    case "ECONNREFUSED":
      return new StartupError(
        `DATABASE_URL: nothing accepts connections at ${where} (connection refused): start PostgreSQL there or correct the host and port in DATABASE_URL.`,
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError(
        `DATABASE_URL: the host ${url.hostname} is not known (${code}): correct the host in DATABASE_URL.`,
      );
    case "CONNECT_TIMEOUT":
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return new StartupError(
        `DATABASE_URL: no answer from ${where} (${code}): check that PostgreSQL runs there and is reachable from this host.`,
      );
    case "3D000":
      return new StartupError(
        `DATABASE_URL: database "${database}" does not exist on ${where}: create it (createdb -h ${url.hostname} -p ${
          url.port || 5432
        } ${database}) or name an existing database in DATABASE_URL.`,
      );
    case "28000":
    case "28P01":
      return new StartupError(
        `DATABASE_URL: PostgreSQL at ${where} refused the login (${message}): correct the user and password in DATABASE_URL.`,
      );
  }
  if (/unsupported startup parameter/.test(message ?? "")) {
    return new StartupError(
      `DATABASE_URL: ${where} refused the connection (${message}): behind PgBouncer, set ignore_startup_parameters = statement_timeout in pgbouncer.ini (docs/operations.md, "Behind PgBouncer").`,
    );
  }
  // Any other error PostgreSQL itself reports (permissions, a server
  // starting up or shutting down) is about that database, not this code.
  if ((e as Error)?.name === "PostgresError") {
    return new StartupError(
      `DATABASE_URL: PostgreSQL at ${where} refused to migrate database "${database}" (${code}: ${message}): fix that database or point DATABASE_URL at another.`,
    );
  }
  return undefined;
}

const describe = (url: URL) => `postgresql://${url.host}${url.pathname}`;
