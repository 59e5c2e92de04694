/**
 * Several service processes (`deno run main.ts`) at once on one database
 * of their own: for what only separate processes sharing a database show.
 * PostgreSQL only: the embedded database belongs to one process.
 */
import postgres, { type Sql } from "postgres";
import { type Instance, startInstances } from "./process.ts";
import { ADMIN, type Contents, loginCookie, testDatabase } from "./service.ts";

export interface Cluster extends AsyncDisposable {
  instances: Instance[];
  /** Each instance's base URL, in order. */
  urls: string[];
  /** A connection of the test's own to their database. */
  sql: Sql;
  /** Logs in on instance `i` (the first admin by default): its session cookie. */
  login(
    i?: number,
    credentials?: { username: string; password: string },
  ): Promise<string>;
}

/**
 * `count` instances started at once with ADMIN as their first admin and
 * `env` added, on a database holding `contents` (by default as a first
 * start with ADMIN left it).
 */
export async function startCluster(
  count: number,
  { env = {}, contents = "first-admin" }: {
    env?: Record<string, string>;
    contents?: Contents;
  } = {},
): Promise<Cluster> {
  const db = await testDatabase(contents);
  try {
    const settings = {
      ADMIN_USERNAME: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      ...db.env,
      ...env,
    };
    const instances = await startInstances(Array(count).fill(settings));
    const urls = instances.map((i) => i.baseUrl);
    const sql = postgres(db.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    return {
      instances,
      urls,
      sql,
      login: (i = 0, credentials = ADMIN) =>
        loginCookie({
          fetch: (path, init) => fetch(urls[i] + path, init),
        }, credentials),
      async [Symbol.asyncDispose]() {
        await sql.end();
        await instances[Symbol.asyncDispose]();
        await db[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await db[Symbol.asyncDispose]();
    throw e;
  }
}
