/**
 * Webhook delivery across processes (PostgreSQL only: the embedded database
 * belongs to one process): an instance killed with SIGKILL in the middle of
 * a burst of writes loses no record (another start delivers every one at
 * least once), and SIGTERM stops an instance whose delivery hangs.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { sleep, spawnService } from "./support/process.ts";
import { ADMIN, loginCookie, testDatabase } from "./support/service.ts";
import { eventually, startReceiver } from "./webhook_support.ts";

const ENV = {
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_POLL_MS: "100",
  // Short: a restart waits out the killed instance's lease on its endpoint,
  // three timeouts and 5 s. A delivery that exceeds it is retried.
  WEBHOOK_TIMEOUT_MS: "200",
  WEBHOOK_RETRY_SCHEDULE: "200",
  LOG_LEVEL: "error",
};

const login = (baseUrl: string) =>
  loginCookie({ fetch: (path, init) => fetch(baseUrl + path, init) });

async function call(
  baseUrl: string,
  cookie: string,
  path: string,
  init: RequestInit = {},
) {
  const res = await fetch(baseUrl + path, {
    ...init,
    headers: { cookie, ...init.headers },
  });
  return { status: res.status, body: await res.json() };
}

Deno.test({
  ...postgresOnly(
    "an instance killed mid-burst loses no record: after a restart every one is delivered",
  ),
  async fn() {
    await using db = await testDatabase("first-admin");
    await using receiver = startReceiver();
    // Slow enough that deliveries are under way when the kill comes.
    receiver.answer("/sync", async () => {
      await sleep(5);
      return 200;
    });
    const env = { ...ENV, ...db.env };
    let instance = await spawnService(env);
    try {
      let cookie = await login(instance.baseUrl);
      const hook = await call(instance.baseUrl, cookie, "/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url("/sync") }),
      });
      assertEquals(hook.status, 201);
      // One user per writer: each of its changes is a record.
      const users: number[] = [];
      for (let w = 0; w < 4; w++) {
        const user = await call(instance.baseUrl, cookie, "/api/users", {
          method: "POST",
          body: JSON.stringify({
            username: `burst${w}`,
            name: "Burst",
            email: `burst${w}@example.com`,
            password: "burst-password",
            role: "viewer",
          }),
        });
        assertEquals(user.status, 201);
        users.push(user.body.id);
      }
      // A burst of role changes, four at a time; the kill comes mid-burst.
      let answered = 0;
      const writer = async (w: number) => {
        for (let i = 0; i < 60; i++) {
          const role = i % 2 ? "viewer" : "admin";
          try {
            await call(instance.baseUrl, cookie, `/api/users/${users[w]}`, {
              method: "PATCH",
              body: JSON.stringify({ role }),
            });
            answered++;
          } catch {
            return; // the instance is gone
          }
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      await eventually("half the burst written", () => answered >= 100);
      assert(receiver.received.length > 0, "deliveries under way");
      instance.kill("SIGKILL");
      await instance.exit();
      await Promise.all(writers);
      const before = receiver.received.length;

      instance = await spawnService(env);
      cookie = await login(instance.baseUrl);
      // Every record committed before the kill: a read of the trail seals
      // what the killed instance left pending.
      const trail = await call(
        instance.baseUrl,
        cookie,
        "/api/audit?limit=1000",
      );
      assertEquals(trail.status, 200);
      const first = Math.min(
        ...receiver.verified("/sync", hook.body.secret).map((m) => m.data.id),
      );
      const ids = (trail.body as { id: number }[]).map((r) => r.id)
        .filter((id) => id >= first);
      const committedBeforeKill = ids.length;
      assert(committedBeforeKill >= 100, `${committedBeforeKill} records`);
      const missing = () => {
        const got = new Set(
          receiver.verified("/sync", hook.body.secret).map((m) => m.data.id),
        );
        return ids.filter((id) => !got.has(id));
      };
      await eventually(
        "every record delivered after the restart",
        () => missing().length === 0,
        60_000,
      );
      assertEquals(missing().length, 0);
      console.log(
        `records: ${committedBeforeKill}, delivered before the kill: ${before}, requests in all: ${receiver.received.length}, missing: ${missing().length}`,
      );
    } finally {
      await instance[Symbol.asyncDispose]();
    }
  },
});

Deno.test({
  ...postgresOnly(
    "SIGTERM stops an instance whose delivery hangs, promptly and cleanly",
  ),
  async fn() {
    await using db = await testDatabase("first-admin");
    await using receiver = startReceiver();
    const { promise: released, resolve: release } = Promise.withResolvers<
      void
    >();
    receiver.answer("/hang", async () => {
      await released;
      return 200;
    });
    await using instance = await spawnService({
      ...ENV,
      ...db.env,
      WEBHOOK_TIMEOUT_MS: "60000",
    });
    try {
      const cookie = await login(instance.baseUrl);
      const hook = await call(instance.baseUrl, cookie, "/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url: receiver.url("/hang") }),
      });
      assertEquals(hook.status, 201);
      await eventually("a delivery hangs", () => receiver.received.length > 0);
      const started = performance.now();
      assertEquals(await instance.stop("SIGTERM"), 0);
      const ms = performance.now() - started;
      assert(ms < 5_000, `stopped after ${Math.round(ms)} ms`);
    } finally {
      release();
    }
  },
});
