/**
 * One run of `deno task test` (tools/test.ts) leaves nothing behind: its
 * test files get a temporary directory of the run's own as TMPDIR (the
 * embedded templates, each test's PGlite data directory and every other
 * temporary file go there), and the databases they make on DATABASE_URL's
 * server carry the run's id in their names. When `deno test` ends, the run
 * removes both. The files of one run share their templates; the next run
 * makes its own.
 *
 * `deno test` started directly has no run: its templates are kept,
 * content-keyed, for the next such start.
 */
import postgres from "postgres";

/** The variable through which a run's test files learn its id. */
export const RUN_ID = "USER_ADMIN_TEST_RUN";

/** The prefix of the databases a test makes on the server. */
export const databasePrefix = (run = Deno.env.get(RUN_ID)) =>
  run ? `ua_r${run}_` : "ua_";

/** A new run: its id and its temporary directory. */
export async function beginRun(): Promise<{ id: string; tmpDir: string }> {
  const id = crypto.randomUUID().slice(0, 8);
  const tmpDir = await Deno.makeTempDir({ prefix: `user-admin-run-${id}-` });
  return { id, tmpDir };
}

/** Removes what a run's tests made: its directory, its databases. */
export async function endRun(
  run: { id: string; tmpDir: string },
  serverUrl: string | undefined,
) {
  await Deno.remove(run.tmpDir, { recursive: true });
  if (!serverUrl) return;
  const sql = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const prefix = databasePrefix(run.id);
    const made = await sql<{ datname: string }[]>`
      select datname from pg_database
      where left(datname, ${prefix.length}) = ${prefix}`;
    for (const { datname } of made) {
      await sql`drop database if exists ${sql(datname)} with (force)`;
    }
  } finally {
    await sql.end();
  }
}
