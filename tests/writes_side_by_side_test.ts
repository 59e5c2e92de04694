/**
 * Writes take turns only where they must: on the rows they change, and for
 * the moment of their commits (the list's version). A write held open
 * elsewhere on other rows, or an admin's own write in flight, holds up no
 * other write; a change to the admin still waits for their writes.
 */
import { assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { holdLocks, lockWaiters, sharedService } from "./support/service.ts";

const service = sharedService();

Deno.test({
  ...postgresOnly(
    "a write of one user held open holds up no write of another, and the list's ETag moves when each commits",
  ),
  async fn() {
    const svc = await service();
    const held = await svc.userClient("viewer");
    const other = await svc.userClient("viewer");
    const etag = async () =>
      (await svc.admin.GET("/api/users")).response.headers.get("etag");
    const before = await etag();
    const write = await holdLocks(
      svc.sql,
      (tx) =>
        tx`update users set name = 'Held Open' where id = ${held.account.id}`,
    );
    let afterPatch;
    try {
      const patched = await svc.admin.PATCH("/api/users/{id}", {
        params: { path: { id: other.account.id } },
        body: { role: "admin" },
      });
      assertEquals(patched.response.status, 200, "the PATCH beside it");
      afterPatch = await etag();
    } finally {
      await write.release();
    }
    const afterHeld = await etag();
    assertEquals(
      new Set([before, afterPatch, afterHeld]).size,
      3,
      "the ETag changes with each commit",
    );
  },
});

Deno.test({
  ...postgresOnly(
    "an admin's write in flight holds up none of their other writes, and a change to the admin waits for it",
  ),
  async fn() {
    const svc = await service();
    const admin = svc.adminAccount.id;
    const target = await svc.userClient("viewer");
    // What a write of the admin's holds while it runs: their row, shared.
    const inFlight = await holdLocks(
      svc.sql,
      (tx) => tx`select 1 from users where id = ${admin} for share`,
    );
    const patched = await svc.admin.PATCH("/api/users/{id}", {
      params: { path: { id: target.account.id } },
      body: { role: "admin" },
    });
    if (patched.response.status !== 200) await inFlight.release();
    assertEquals(patched.response.status, 200, "the admin's next write");
    // The new admin demotes the first one: that waits for the write in flight.
    const demotion = target.client.PATCH("/api/users/{id}", {
      params: { path: { id: admin } },
      body: { role: "viewer" },
    });
    await lockWaiters(svc.sql, 1);
    await inFlight.release();
    assertEquals((await demotion).response.status, 200, "the demotion");
    const [{ role }] = await svc.sql<{ role: string }[]>`
      select role from users where id = ${admin}`;
    assertEquals(role, "viewer");
    await svc.sql`update users set role = 'admin' where id = ${admin}`;
  },
});
