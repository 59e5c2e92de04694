import { assertEquals } from "./support/assert.ts";
import { startService } from "./support/service.ts";

Deno.test("requests still pending after REQUEST_TIMEOUT_MS answer their endpoint's 500, and the requests after them are served", async () => {
  await using svc = await startService({ REQUEST_TIMEOUT_MS: "300" });
  // Holding the lock of the users table stalls every query that reads it.
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => locked = r);
  const holder = svc.sql.begin(async (tx) => {
    await tx`lock table users in access exclusive mode`;
    locked();
    await released;
  });
  await isLocked;
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
    release();
    await holder;
  }
  assertEquals((await svc.admin.me()).ok, true);
  assertEquals((await svc.admin.GET("/api/users")).response.status, 200);
});
