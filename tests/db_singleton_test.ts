/**
 * Every users write bumps one row of users_version_slots (the list's
 * version, migration 029) and every seal of audit records moves the one row
 * of audit_chain. Under a sustained write rate those small tables grow by
 * pages of dead versions, and a scan would read them
 * all while writers take turns; migration 007 makes both functions find the
 * row by its primary key, and 008's seal does the same. Counted by PostgreSQL's own statistics: the writes
 * add index scans of each table and not one sequential scan.
 */
import { canonicalTail } from "../src/audit/chain.ts";
import { auditEvents } from "../src/audit/events.ts";
import { auditDatabase } from "./audit_support.ts";
import { assert, assertEquals } from "./support/assert.ts";

interface Scans {
  relname: string;
  seq: number;
  idx: number;
}

Deno.test("users writes and audit seals find their one-row tables by key, never by a scan", async () => {
  await using audit = await auditDatabase();
  const conn = await audit.db.sql.reserve();
  try {
    // One backend throughout: statistics are flushed per backend.
    const scans = async () => {
      await conn`select pg_stat_force_next_flush()`;
      await conn`select pg_stat_clear_snapshot()`;
      const rows = await conn<Scans[]>`
        select relname, coalesce(seq_scan, 0)::int as seq,
          coalesce(idx_scan, 0)::int as idx
        from pg_stat_user_tables
        where relname in ('users_version_slots', 'audit_chain')
        order by relname`;
      return Object.fromEntries(rows.map((r) => [r.relname, r]));
    };
    const before = await scans();
    for (let i = 0; i < 3; i++) {
      await conn`
        insert into users (username, username_key, name, name_key, email,
          email_key, role, password_hash)
        values (${`s${i}`}, ${`s${i}`}, 'S', 's', ${`s${i}@example.com`},
          ${`s${i}@example.com`}, 'viewer', 'not-a-hash')`;
      // A record and its seal as the store sends them (recordAudit needs
      // a transaction of the pool; this one backend is reserved).
      const event = auditEvents.logout({ id: 1, username: "someone" }, {
        requestId: `singleton-${i}`,
        clientAddress: "192.0.2.1",
        via: "api",
      });
      await conn`insert into audit_pending (tail) values (${
        canonicalTail(event)
      })`;
      const [{ sealed }] = await conn<{ sealed: number }[]>`
        select audit_seal(1000) as sealed`;
      assertEquals(sealed, 1);
    }
    const after = await scans();
    for (const table of ["users_version_slots", "audit_chain"]) {
      assertEquals(
        after[table].seq - before[table].seq,
        0,
        `${table} was scanned sequentially`,
      );
      assert(
        after[table].idx - before[table].idx >= 3,
        `${table}: ${
          after[table].idx - before[table].idx
        } index scans for 3 writes`,
      );
    }
  } finally {
    conn.release();
  }
});
