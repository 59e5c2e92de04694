import { assertEquals } from "./support/assert.ts";
import { holdLock, startService } from "./support/service.ts";

Deno.test("requests still pending after REQUEST_TIMEOUT_MS answer their endpoint's 500, and the requests after them are served", async () => {
  await using svc = await startService({ REQUEST_TIMEOUT_MS: "300" });
  // Holding the lock of the users table stalls every query that reads it.
  const lock = await holdLock(svc.sql, ["users"]);
  try {
    const first = svc.admin.GET("/api/users");
    await new Promise((r) => setTimeout(r, 150));
    const second = svc.admin.me();
    const [list, me] = await Promise.all([first, second]);
    assertEquals(list.response.status, 500);
    assertEquals(list.error, { error: "Failed to list users" });
    assertEquals(me, {
      ok: false,
      status: 500,
      error: "Internal server error",
    });
  } finally {
    await lock.release();
  }
  assertEquals((await svc.admin.me()).ok, true);
  assertEquals((await svc.admin.GET("/api/users")).response.status, 200);
});
