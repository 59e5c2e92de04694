/**
 * postgres.js 3.4.9 throws outside any promise when a transaction's backend
 * dies mid-query: its own ROLLBACK is queued with setImmediate and written to
 * the socket it has just set to null (porsager/postgres#1208). Unguarded,
 * that ends the whole process (and fails this test as an uncaught error);
 * the service's connections must survive it and keep serving.
 */
import { connect } from "../src/db/database.ts";
import { assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { testDatabase } from "./support/service.ts";

Deno.test({
  ...postgresOnly("a transaction whose backend is terminated mid-query"),
  async fn() {
    await using db = await testDatabase();
    const url = db.env.DATABASE_URL;
    const sql = connect(url, { max: 2, prepare: true });
    const killer = connect(url, { max: 1, prepare: true });
    try {
      for (let round = 0; round < 3; round++) {
        let pid: number | undefined;
        // The outcome is taken at once: the transaction may fail while the
        // killer's own answer is still on its way, and a rejection nobody
        // handles yet fails the test as uncaught.
        const failed = sql.begin(async (t) => {
          [{ pid }] = await t<
            { pid: number }[]
          >`select pg_backend_pid() as pid`;
          await t`select pg_sleep(5)`;
        }).then(() => false, () => true);
        while (pid === undefined) await new Promise((r) => setTimeout(r, 10));
        await killer`select pg_terminate_backend(${pid})`;
        assertEquals(await failed, true);
        // Let the queued write run; then the pool must still answer.
        await new Promise((r) => setTimeout(r, 50));
        const [{ ok }] = await sql<{ ok: number }[]>`select 1 as ok`;
        assertEquals(ok, 1);
      }
    } finally {
      await sql.end({ timeout: 1 });
      await killer.end({ timeout: 1 });
    }
  },
});
