/**
 * An import across processes (PostgreSQL only: the embedded database
 * belongs to one process): an instance killed with SIGKILL in the middle of
 * an import leaves its batch undone; the next start leases the job again
 * and goes on, so every user is created once and recorded once.
 */
import postgres from "postgres";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { sleep, spawnService } from "./support/process.ts";
import { ADMIN, loginCookie, testDatabase } from "./support/service.ts";

const ENV = {
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
  // Short, so the job's lease runs out soon after the kill.
  IMPORT_LEASE_SECONDS: "2",
  IMPORT_POLL_MS: "100",
  LOG_LEVEL: "error",
};

/** A bcrypt hash given as is: the fast path. */
const HASH = "$2b$04$rL60lBa65WZtYM2QmI89X.WlfUKG2zn/R.cpZa33.2kUZ6IEAd3SO";
const COUNT = 30_000;

async function status(baseUrl: string, cookie: string, id: number) {
  const res = await fetch(`${baseUrl}/api/imports/${id}`, {
    headers: { cookie },
  });
  return await res.json();
}

Deno.test({
  ...postgresOnly(
    "an instance killed mid-import: after a restart the import resumes and creates every user once",
  ),
  async fn() {
    await using db = await testDatabase("first-admin");
    const env = { ...ENV, ...db.env };
    const sql = postgres(db.env.DATABASE_URL, { max: 1, onnotice: () => {} });
    let instance = await spawnService(env);
    const login = (baseUrl: string) =>
      loginCookie({ fetch: (path, init) => fetch(baseUrl + path, init) });
    try {
      let cookie = await login(instance.baseUrl);
      const body = Array.from({ length: COUNT }, (_, i) =>
        JSON.stringify({
          username: `crash${i}`,
          name: `Crash ${i}`,
          email: `crash${i}@example.com`,
          passwordHash: HASH,
        })).join("\n");
      const res = await fetch(`${instance.baseUrl}/api/imports`, {
        method: "POST",
        headers: { cookie, "content-type": "application/x-ndjson" },
        body,
      });
      assertEquals(res.status, 202);
      const { id } = await res.json();
      // Killed once some batches committed, well before the last.
      for (;;) {
        const s = await status(instance.baseUrl, cookie, id);
        if (s.processed >= 3000) break;
        await sleep(10);
      }
      instance.kill("SIGKILL");
      await instance.exit();
      const [atKill] = await sql<{ processed: number }[]>`
        select processed from import_jobs where id = ${id}`;
      assert(atKill.processed < COUNT, "killed mid-import");

      instance = await spawnService(env);
      cookie = await login(instance.baseUrl);
      let last;
      for (const until = Date.now() + 120_000; Date.now() < until;) {
        last = await status(instance.baseUrl, cookie, id);
        if (last.status === "finished") break;
        await sleep(100);
      }
      assertEquals(
        {
          status: last.status,
          total: last.total,
          processed: last.processed,
          created: last.created,
          failed: last.failed,
        },
        {
          status: "finished",
          total: COUNT,
          processed: COUNT,
          created: COUNT,
          failed: 0,
        },
      );
      const [counts] = await sql<
        { users: number; distinct: number; records: number }[]
      >`select
          (select count(*)::int from users where username like 'crash%') as users,
          (select count(distinct username)::int from users
            where username like 'crash%') as distinct,
          (select count(*)::int from audit_events a
            where action = 'user.created' and target_username like 'crash%')
            + (select count(*)::int from audit_pending
              where tail like '"user.created",%"crash%') as records`;
      assertEquals(counts, { users: COUNT, distinct: COUNT, records: COUNT });
    } finally {
      await instance[Symbol.asyncDispose]();
      await sql.end();
    }
  },
});
