/**
 * The pool's idle timeout: a connection in use is never ended for idleness,
 * and one left idle ends `idle_timeout` seconds after its last query (the
 * service's pool relies on both; see src/db/database.ts).
 */
import postgres from "postgres";
import { assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { sleep } from "./support/process.ts";

Deno.test({
  ...postgresOnly(
    "a pooled connection stays open while used and ends idle_timeout after its last query",
  ),
  async fn() {
    const url = Deno.env.get("DATABASE_URL")!;
    const name = `idle-test-${crypto.randomUUID().slice(0, 8)}`;
    const closes: number[] = [];
    const sql = postgres(url, {
      max: 1,
      idle_timeout: 1,
      onnotice: () => {},
      onclose: () => closes.push(performance.now()),
      connection: { application_name: name },
    });
    const observer = postgres(url, { max: 1, onnotice: () => {} });
    const backends = async () =>
      (await observer<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where application_name = ${name}`)[0].n;
    try {
      // A query every 300 ms for 2.4 s: each one moves the idle deadline,
      // though the first timeout was armed for 1 s after the first query.
      for (let i = 0; i < 8; i++) {
        await sql`select 1`;
        await sleep(300);
      }
      // A query that runs longer than idle_timeout: busy is not idle.
      await sql`select pg_sleep(1.5)`;
      assertEquals(closes.length, 0, "ended while in use");
      assertEquals(await backends(), 1);

      const last = performance.now();
      await sql`select 1`;
      // Ended, and not before its second: waited for up to 5 s, so a busy
      // machine's late timer does not fail it.
      while (closes.length === 0 && performance.now() - last < 5000) {
        await sleep(50);
      }
      assertEquals(closes.length, 1, "not ended after 5 s idle");
      const idleFor = closes[0] - last;
      assertEquals(
        idleFor >= 950,
        true,
        `ended ${Math.round(idleFor)} ms after its last query`,
      );
      assertEquals(await backends(), 0);

      // And the pool opens a new connection when asked again.
      const [{ ok }] = await sql<{ ok: number }[]>`select 1 as ok`;
      assertEquals(ok, 1);
    } finally {
      await sql.end({ timeout: 1 });
      await observer.end({ timeout: 1 });
    }
  },
});
