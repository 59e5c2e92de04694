/**
 * A write re-checks its caller inside its own transaction: two admins who
 * delete or demote each other at the same moment never both succeed.
 */
import { hash } from "@node-rs/bcrypt";
import {
  type Account,
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import {
  holdLocks,
  lockWaiters,
  sharedService,
  type TestService,
} from "./support/service.ts";

const service = sharedService();

const ROUNDS = 12;
const PASSWORD = "race-password-1";
// The race is the subject, not creation: each admin's row is inserted with
// one real hash made once, and each logs in through the API.
const HASH = hash(PASSWORD, 10);
let n = 0;

async function loggedInAdmin(
  svc: TestService,
): Promise<{ client: UserAdminClient; account: Account }> {
  const name = `racer${++n}`;
  await svc.sql`
    insert into users (username, username_key, name, name_key, email, email_key, role, password_hash)
    values (${name}, ${name}, ${name}, ${name}, ${`${name}@example.com`},
      ${`${name}@example.com`}, 'admin', ${await HASH})`;
  const client = svc.client();
  const login = await client.login(name, PASSWORD);
  assert(login.ok, `${name} could not log in`);
  return { client, account: login.data };
}

Deno.test("two admins deleting each other at once: one succeeds, the other answers 401 (many rounds)", async () => {
  const svc = await service();
  // The survivor of each round faces a new admin in the next.
  let a = await loggedInAdmin(svc);
  for (let round = 0; round < ROUNDS; round++) {
    const b = await loggedInAdmin(svc);
    const [ab, ba] = await Promise.all([
      a.client.DELETE("/api/users/{id}", {
        params: { path: { id: b.account.id } },
      }),
      b.client.DELETE("/api/users/{id}", {
        params: { path: { id: a.account.id } },
      }),
    ]);
    const statuses = [ab.response.status, ba.response.status].sort();
    assertEquals(statuses, [200, 401], `round ${round}`);
    const loser = ab.response.status === 401 ? ab : ba;
    assertEquals(loser.error, { error: "Unauthorised" });
    const [{ n }] = await svc.sql<{ n: number }[]>`
      select count(*)::int as n from users
      where id in (${a.account.id}, ${b.account.id})`;
    assertEquals(n, 1, `round ${round}: exactly one of them is left`);
    if (ab.response.status !== 200) a = b;
  }
});

Deno.test("two admins demoting each other at once: one succeeds, the other answers 403 (many rounds)", async () => {
  const svc = await service();
  const a = await loggedInAdmin(svc);
  const b = await loggedInAdmin(svc);
  for (let round = 0; round < ROUNDS; round++) {
    const [ab, ba] = await Promise.all([
      a.client.PATCH("/api/users/{id}", {
        params: { path: { id: b.account.id } },
        body: { role: "viewer" },
      }),
      b.client.PATCH("/api/users/{id}", {
        params: { path: { id: a.account.id } },
        body: { role: "viewer" },
      }),
    ]);
    const statuses = [ab.response.status, ba.response.status].sort();
    assertEquals(statuses, [200, 403], `round ${round}`);
    const loser = ab.response.status === 403 ? ab : ba;
    assertEquals(loser.error, { error: "Forbidden" });
    const roles = await svc.sql<{ role: string }[]>`
      select role from users where id in (${a.account.id}, ${b.account.id})
      order by role`;
    assertEquals(roles.map((r) => r.role), ["admin", "viewer"]);
    // Both admins again for the next round (a role change ends no session).
    await svc.sql`update users set role = 'admin'
      where id in (${a.account.id}, ${b.account.id})`;
  }
});

Deno.test({
  ...postgresOnly(
    "a logout and a reset of the same user, their session locks lined up: both succeed",
  ),
  async fn() {
    const svc = await service();
    const admin = await loggedInAdmin(svc);
    const user = await loggedInAdmin(svc);
    // A third party holds the user's session row, so the logout waits for
    // it first and the reset (role and password) queues behind the logout.
    // Were the reset's audit chain taken before its session delete, the
    // released logout would hold the session and wait for the chain while
    // the reset held the chain and waited for the session: a deadlock, one
    // side answering 500.
    const row = await holdLocks(
      svc.sql,
      (tx) =>
        tx`select 1 from sessions where user_id = ${user.account.id} for update`,
    );
    const logout = user.client.POST("/api/auth/logout");
    await lockWaiters(svc.sql, 1);
    const reset = admin.client.PATCH("/api/users/{id}", {
      params: { path: { id: user.account.id } },
      body: { role: "viewer", password: `${PASSWORD}-new` },
    });
    await lockWaiters(svc.sql, 2);
    await row.release();
    const [r, l] = await Promise.all([reset, logout]);
    assertEquals(l.response.status, 200, "the logout");
    assertEquals(r.response.status, 200, "the reset");
    const [{ n }] = await svc.sql<{ n: number }[]>`
      select count(*)::int as n from sessions where user_id = ${user.account.id}`;
    assertEquals(n, 0);
  },
});

Deno.test({
  ...postgresOnly(
    "a key whose owner is disabled while the key's write waits answers 401 Unauthorised, and the write is not applied",
  ),
  async fn() {
    const svc = await service();
    const admin = await loggedInAdmin(svc);
    const owner = await loggedInAdmin(svc);
    const minted = await owner.client.POST("/api/users/{id}/keys", {
      params: { path: { id: owner.account.id } },
      body: { name: "ci" },
    });
    assert(minted.data, JSON.stringify(minted.error));
    const keyed = createUserAdminClient({
      baseUrl: svc.baseUrl,
      apiKey: minted.data.key,
    });
    // The owner's row held: the disable queues for it first, then the key's
    // write (its key already resolved to an enabled admin) queues behind
    // the disable, and so re-checks its caller after the disable commits.
    const row = await holdLocks(
      svc.sql,
      (tx) => tx`select 1 from users where id = ${owner.account.id} for update`,
    );
    const disable = admin.client.POST("/api/users/{id}/disable", {
      params: { path: { id: owner.account.id } },
      body: {},
    });
    await lockWaiters(svc.sql, 1);
    const create = keyed.POST("/api/users", {
      body: {
        username: "made-by-key",
        name: "Made by key",
        email: "made-by-key@example.com",
        password: PASSWORD,
        role: "viewer",
      },
    });
    await lockWaiters(svc.sql, 2);
    await row.release();
    const [d, c] = await Promise.all([disable, create]);
    assertEquals(d.response.status, 200, "the disable");
    assertEquals([c.response.status, c.error], [401, {
      error: "Unauthorised",
    }]);
    const made = await svc.sql`
      select 1 from users where username = 'made-by-key'`;
    assertEquals(made.length, 0, "the key's write was applied");
  },
});
