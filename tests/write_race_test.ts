/**
 * A write re-checks its caller inside its own transaction: two admins who
 * delete or demote each other at the same moment never both succeed.
 */
import { assertEquals } from "./support/assert.ts";
import { startService } from "./support/service.ts";

const ROUNDS = 12;

Deno.test("two admins deleting each other at once: one succeeds, the other answers 401 (many rounds)", async () => {
  await using svc = await startService();
  for (let round = 0; round < ROUNDS; round++) {
    const a = await svc.userClient("admin");
    const b = await svc.userClient("admin");
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
  }
});

Deno.test("two admins demoting each other at once: one succeeds, the other answers 403 (many rounds)", async () => {
  await using svc = await startService();
  for (let round = 0; round < ROUNDS; round++) {
    const a = await svc.userClient("admin");
    const b = await svc.userClient("admin");
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
  }
});
