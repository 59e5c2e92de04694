/**
 * Database faults on the shared PostgreSQL server, confined to the test's
 * own database: its backends are terminated, its users table is locked.
 * The embedded database has no other session to do this from.
 */
import postgres from "postgres";
import { openDatabase } from "../src/db/database.ts";
import { MIGRATION_LOCK } from "../src/db/migrate.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import {
  assertContractAnswer,
  assertWholeRows,
  settled,
  type Timed,
  timed,
  timedCreate,
} from "./support/timed.ts";
import {
  holdLock,
  loginCookie,
  newUser,
  startService,
  testDatabase,
  type TestService,
} from "./support/service.ts";

/** A connection of the test's own to the service's database. */
function outsider(svc: TestService) {
  return postgres(svc.config.DATABASE_URL!, { max: 1, onnotice: () => {} });
}

Deno.test({
  ...postgresOnly(
    "when every backend of its database is terminated mid-stream, each request still answers in time and the service recovers",
  ),
  async fn() {
    await using svc = await startService({ REQUEST_TIMEOUT_MS: "2000" });
    const killer = outsider(svc);
    const dbName = new URL(svc.config.DATABASE_URL!).pathname.slice(1);
    const cookie = await loginCookie(svc);
    const answers: Timed[] = [];
    const created = new Set<string>();
    let n = 0;
    const worker = async (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const name = `stream${++n}`;
        const batch = await Promise.all([
          timed(svc, "list", "/api/users", {
            headers: { cookie },
          }),
          timedCreate(svc, cookie, name),
          timed(svc, "health", "/health"),
        ]);
        if (batch[1].status === 201) created.add(name);
        answers.push(...batch);
      }
    };
    let terminated = 0;
    // Each round holds a lock for a moment, so some of the service's queries
    // are surely in flight, then terminates every backend but its own.
    const kill = async () => {
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 100));
        await killer.begin(async (tx) => {
          await tx`lock table users in access exclusive mode`;
          await new Promise((r) => setTimeout(r, 150));
          const rows = await tx`
            select pg_terminate_backend(pid) as ok from pg_stat_activity
            where datname = ${dbName} and pid <> pg_backend_pid()`;
          terminated += rows.filter((r) => r.ok).length;
        });
      }
    };
    try {
      await Promise.all([worker(12), worker(12), kill()]);
    } finally {
      await killer.end();
    }
    assert(terminated > 0, "no backend was terminated");
    answers.forEach(assertContractAnswer);
    assert(answers.some((a) => a.status === 500), "no request met the outage");
    // The same process serves again.
    const after = await timed(svc, "list", "/api/users", {
      headers: { cookie },
    });
    assertEquals(after.status, 200);
    assertEquals((await timed(svc, "health", "/health")).status, 200);
    await assertWholeRows(svc, created);
  },
});

Deno.test({
  ...postgresOnly(
    "when its tables are locked, requests answer their 500 in time, health stays honest, and no answered-as-failed create is applied later",
  ),
  async fn() {
    await using svc = await startService({
      REQUEST_TIMEOUT_MS: "2000",
      METRICS_PORT: "0",
    });
    const cookie = await loginCookie(svc);
    const locker = outsider(svc);
    const lock = await holdLock(locker, ["users", "sessions"]);
    try {
      const answers = await Promise.all([
        timed(svc, "list", "/api/users", { headers: { cookie } }),
        timed(svc, "create", "/api/users", {
          method: "POST",
          headers: { cookie },
          body: JSON.stringify({
            username: "during-lock",
            name: "During Lock",
            email: "lock@example.com",
            password: "lock-password",
            role: "viewer",
          }),
        }),
        timed(svc, "login", "/api/auth/login", {
          method: "POST",
          body: JSON.stringify({
            username: "admin",
            password: "admin-pass-1234",
          }),
        }),
        timed(svc, "me", "/api/auth/me", { headers: { cookie } }),
      ]);
      for (const a of answers) {
        assertContractAnswer(a);
        assertEquals(a.status, 500, a.what);
      }
      // The database itself still answers: health says so.
      assertEquals((await timed(svc, "health", "/health")).status, 200);
    } finally {
      await lock.release();
      await locker.end();
    }
    // Whatever was left waiting behind the lock must not complete now.
    await settled(svc);
    const [{ n }] = await svc.sql<{ n: number }[]>`
      select count(*)::int as n from users where username = 'during-lock'`;
    assertEquals(n, 0, "a create answered 500 was applied after all");
    const list = await timed(svc, "list", "/api/users", {
      headers: { cookie },
    });
    assertEquals(list.status, 200);
  },
});

Deno.test({
  ...postgresOnly(
    "a create stuck behind another transaction's uncommitted insert answers 500 in time and is never applied after",
  ),
  async fn() {
    await using svc = await startService({
      REQUEST_TIMEOUT_MS: "2000",
      METRICS_PORT: "0",
    });
    const cookie = await loginCookie(svc);
    const other = outsider(svc);
    let rollBack!: () => void;
    const done = new Promise<void>((r) => rollBack = r);
    let inserted!: () => void;
    const pending = new Promise<void>((r) => inserted = r);
    // Holds the unique key "contended" without committing, then rolls back.
    const rolledBack = new Error("roll back");
    const holding = other.begin(async (tx) => {
      await tx`
        insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
        values ('contended', 'contended', 'Other', 'other', 'other@example.com', 'other@example.com', 'viewer', 'x')`;
      inserted();
      await done;
      throw rolledBack;
    }).catch((e) => {
      if (e !== rolledBack) throw e;
    });
    try {
      // A failed insert fails the test here instead of leaving it waiting.
      await Promise.race([pending, holding]);
      const answer = await timed(svc, "create", "/api/users", {
        method: "POST",
        headers: { cookie },
        body: JSON.stringify({
          username: "contended",
          name: "Contended",
          email: "contended@example.com",
          password: "contended-password",
          role: "viewer",
        }),
      });
      assertContractAnswer(answer);
      assertEquals(answer.status, 500);
    } finally {
      rollBack();
      await holding;
      await other.end();
    }
    // The key is free now: the abandoned insert must not slip in.
    await settled(svc);
    const rows = await svc
      .sql`select 1 from users where username = 'contended'`;
    assertEquals(rows.length, 0, "a create answered 500 was applied after all");
    // And the service creates it normally now.
    const again = await svc.admin.POST("/api/users", {
      body: {
        username: "contended",
        name: "Contended",
        email: "contended@example.com",
        password: "contended-password",
        role: "viewer",
      },
    });
    assertEquals(again.response.status, 201);
  },
});

Deno.test({
  ...postgresOnly(
    "logins and a logout whose writes waited in the pool's queue past their deadline answer 500 and are never applied: no session, no count, no record",
  ),
  async fn() {
    // One connection: whatever queues behind a stalled query waits for it.
    await using svc = await startService({
      DATABASE_POOL_MAX: "1",
      REQUEST_TIMEOUT_MS: "3000",
      BCRYPT_COST: "12",
      METRICS_PORT: "0",
    });
    const cookie = await loginCookie(svc);
    const people = ["bob", "carol", "dave", "erin"] as const;
    const ids: Record<string, number> = {};
    for (const name of people) {
      const made = await svc.admin.POST("/api/users", { body: newUser(name) });
      assertEquals(made.response.status, 201);
      ids[name] = made.data!.id;
    }
    const daveCookie = await loginCookie(svc, {
      username: "dave",
      password: "dave-password",
    });
    const outside = outsider(svc);
    await svc.store.audit.seal();
    const [{ head }] = await outside<{ head: number }[]>`
      select coalesce(max(id), 0)::int as head from audit_events`;
    /** Records of bob, carol and dave since, read through the API (which seals first). */
    const recordsOf = async () => {
      const page = await svc.admin.GET("/api/audit", {
        params: { query: { limit: 1000 } },
      });
      return page.data!.filter((r) =>
        r.id > head && r.target && people.some((p) => ids[p] === r.target!.id)
      ).map((r) => `${r.action} ${r.target!.username}`);
    };
    const login = (username: string, password: string) =>
      timed(svc, "login", "/api/auth/login", {
        method: "POST",
        body: JSON.stringify({ username, password }),
      });
    try {
      // Bob's login and erin's wrong guess are counted and in their
      // password checks (bcrypt at cost 12)...
      const bob = login("bob", "bob-password");
      const erin = login("erin", "not-erins-password");
      for (let i = 0; i < 200; i++) {
        const [{ n }] = await outside<{ n: number }[]>`
          select count(distinct username_hash)::int as n from login_failures
          where failures > 0`;
        if (n === 2) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      // ...when the sessions table is locked and reads queue up on the one
      // connection, each stalled for the statement timeout (1 s): bob's
      // session and erin's record wait behind them past their deadline, and
      // so do carol's wrong guess and dave's logout.
      const lock = await holdLock(outside, ["sessions"]);
      const stalled = Array.from(
        { length: 5 },
        () => timed(svc, "me", "/api/auth/me", { headers: { cookie } }),
      );
      const carol = login("carol", "not-carols-password");
      const dave = timed(svc, "logout", "/api/auth/logout", {
        method: "POST",
        headers: { cookie: daveCookie },
      });
      const answered = await Promise.all([bob, erin, carol, dave]);
      for (const a of answered) {
        assertContractAnswer(a);
        assertEquals(a.status, 500, a.what);
      }
      await lock.release();
      await Promise.all(stalled);
      // What waited is let through now. Once the service has no store call
      // and no bcrypt job in flight, whatever it would still apply is
      // applied; later requests through the one connection come after
      // anything queued on it, and nothing has changed after them either.
      await settled(svc);
      const nothingApplied = async () => {
        const sessions = await outside<{ user_id: number }[]>`
          select user_id from sessions where user_id = any(${[
          ids.bob,
          ids.dave,
        ]}::int[])`;
        assertEquals(
          sessions.map((s) => s.user_id),
          [ids.dave],
          "bob has a session, or dave's logout was applied",
        );
        const counted = await outside`
          select 1 from login_failures
          where username_hash = sha256(convert_to('carol', 'UTF8'))`;
        assertEquals(counted.length, 0, "a guess answered 500 was counted");
        assertEquals(
          await recordsOf(),
          [],
          "a request answered 500 left a record",
        );
      };
      await nothingApplied();
      const me = await timed(svc, "me", "/api/auth/me", {
        headers: { cookie: daveCookie },
      });
      assertEquals(me.status, 200);
      assert((await svc.admin.login("admin", "admin-pass-1234")).ok);
      await nothingApplied();
    } finally {
      await outside.end();
    }
  },
});

Deno.test({
  ...postgresOnly(
    "startup waits for another instance's migration however long it takes, despite the statement timeout",
  ),
  async fn() {
    await using db = await testDatabase();
    const holder = postgres(db.env.DATABASE_URL, { max: 1 });
    try {
      // Another instance is migrating: it holds the migration lock.
      await holder`select pg_advisory_lock(${MIGRATION_LOCK.toString()}::bigint)`;
      const opening = openDatabase({
        DATABASE_URL: db.env.DATABASE_URL,
        DATA_DIR: "unused",
        DATABASE_POOL_MAX: 1,
        DATABASE_PREPARE: true,
        // Statements may run 100 ms; its wait below lasts three times that.
        REQUEST_TIMEOUT_MS: 300,
      });
      const outcome = opening.then(() => "opened", (e) => `failed: ${e}`);
      // Released once the opening's statement has waited for the lock 300
      // ms, by that statement's own start: however slow the machine.
      const until = Date.now() + 30_000;
      for (let waited = 0; waited < 300;) {
        assert(Date.now() < until, "the opening never waited for the lock");
        const now = await Promise.race([
          outcome,
          new Promise((r) => setTimeout(() => r("waiting"), 20)),
        ]);
        assertEquals(
          now,
          "waiting",
          "the opening ended while the lock was held",
        );
        [{ waited }] = await holder<{ waited: number }[]>`
          select coalesce(max(extract(epoch from now() - query_start)), 0)
            ::float8 * 1000 as waited
          from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and wait_event = 'advisory'`;
      }
      await holder`select pg_advisory_unlock(${MIGRATION_LOCK.toString()}::bigint)`;
      const opened = await opening;
      try {
        const [{ n }] = await opened.sql<{ n: number }[]>`
          select count(*)::int as n from schema_migrations`;
        assert(n >= 1);
      } finally {
        await opened.close();
      }
    } finally {
      await holder.end();
    }
  },
});
