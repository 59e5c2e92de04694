/**
 * Webhooks that tell the truth: an endpoint's health from its deliveries
 * (healthy, failing with the count and the last error, disabled), a test
 * event sent by the delivery worker to that endpoint alone, and a failing
 * record retried now instead of at its scheduled time. A real receiver on
 * loopback verifies every message with the `standardwebhooks` library.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { newUser, startService, type TestService } from "./support/service.ts";
import { eventually, startReceiver } from "./webhook_support.ts";

/** Loopback receivers, fast polls, and a retry far enough off to see "retry now" work. */
const SETTINGS = {
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_POLL_MS: "50",
  WEBHOOK_RETRY_SCHEDULE: "600000",
  WEBHOOK_TIMEOUT_MS: "1000",
};

async function createHook(svc: TestService, url: string) {
  const created = await svc.admin.post("/api/webhooks", {
    body: { url, actions: ["user.created"] },
  });
  assert(created.ok, JSON.stringify(created));
  return created.data;
}

async function hook(svc: TestService, id: number) {
  const got = await svc.admin.get("/api/webhooks/{id}", {
    params: { path: { id } },
  });
  assert(got.ok, JSON.stringify(got));
  return got.data;
}

async function deliveries(svc: TestService, id: number) {
  const got = await svc.admin.get("/api/webhooks/{id}/deliveries", {
    params: { path: { id } },
  });
  assert(got.ok, JSON.stringify(got));
  return got.data;
}

let users = 0;
async function someUserCreated(svc: TestService) {
  const made = await svc.admin.post("/api/users", {
    body: newUser(`health${++users}`),
  });
  assert(made.ok, JSON.stringify(made));
}

Deno.test("an endpoint shows its health: healthy with its last delivery, failing with the count and last error, disabled; retry now sends the held record at once", async () => {
  await using svc = await startService(SETTINGS, { bcryptCost: 4 });
  await using receiver = startReceiver();
  let down = true;
  receiver.answer("/in", () => down ? 503 : 200);
  const created = await createHook(svc, receiver.url("/in"));
  assertEquals(
    [created.health, created.lastError, created.lastDeliveredAt],
    ["healthy", null, null],
  );
  // Nothing is failing: nothing to retry.
  assertEquals(
    await svc.admin.post("/api/webhooks/{id}/retry", {
      params: { path: { id: created.id } },
    }),
    { ok: false, status: 409, error: "No failed delivery is waiting" },
  );

  await someUserCreated(svc);
  const failing = await eventually(
    "the first attempt fails",
    async () => {
      const h = await hook(svc, created.id);
      return h.health === "failing" && h;
    },
  );
  assertEquals(failing.failures, 1);
  assertEquals(failing.status, "active");
  const [attempt] = await deliveries(svc, created.id);
  assertEquals([attempt.outcome, attempt.status], ["failed", 503]);
  assertEquals(failing.lastError, attempt.error);
  assert(failing.lastError !== null);
  // The next attempt is ten minutes off.
  assert(Date.parse(failing.nextAttemptAt!) - Date.now() > 500_000);

  // Retry now: the worker sends the held record again at once.
  down = false;
  const retried = await svc.admin.post("/api/webhooks/{id}/retry", {
    params: { path: { id: created.id } },
  });
  assert(retried.ok, JSON.stringify(retried));
  assert(Date.parse(retried.data.nextAttemptAt!) <= Date.now() + 1000);
  const healthy = await eventually("the retry delivers", async () => {
    const h = await hook(svc, created.id);
    return h.health === "healthy" && h;
  });
  assertEquals([healthy.failures, healthy.lastError], [0, null]);
  assert(healthy.lastDeliveredAt !== null);
  const [second, first] = await deliveries(svc, created.id);
  assertEquals([first.attempt, first.outcome], [1, "failed"]);
  assertEquals(
    [second.type, second.recordId, second.attempt, second.outcome],
    ["record", first.recordId, 2, "delivered"],
  );
  // One record, sent twice, verified both times.
  const messages = receiver.verified("/in", created.secret);
  assertEquals(messages.map((m) => m.type), ["user.created", "user.created"]);

  // Disabled: its health says so, with the error that disabled it.
  await svc.sql`
    update webhook_endpoints set disabled_at = now(), failures = 3
    where id = ${created.id}`;
  const disabled = await hook(svc, created.id);
  assertEquals([disabled.status, disabled.health], ["disabled", "disabled"]);
  assertEquals(disabled.lastError, attempt.error);
  assertEquals(
    await svc.admin.post("/api/webhooks/{id}/retry", {
      params: { path: { id: created.id } },
    }),
    { ok: false, status: 409, error: "No failed delivery is waiting" },
  );
  assertEquals(
    await svc.admin.post("/api/webhooks/{id}/retry", {
      params: { path: { id: 424242 } },
    }),
    { ok: false, status: 404, error: "Webhook not found" },
  );
});

Deno.test("a test event goes to that endpoint alone, signed, once, through the delivery worker; a failing record is not retried by it", async () => {
  await using svc = await startService(SETTINGS, { bcryptCost: 4 });
  await using receiver = startReceiver();
  receiver.answer("/down", () => 500);
  const quiet = await createHook(svc, receiver.url("/quiet"));
  const target = await createHook(svc, receiver.url("/target"));

  const queued = await svc.admin.post("/api/webhooks/{id}/test", {
    params: { path: { id: target.id } },
  });
  assert(queued.ok, JSON.stringify(queued));
  assertEquals(queued.status, 202);
  const { deliveryId } = queued.data;
  const [message] = await eventually(
    "the test event arrives",
    () => {
      const got = receiver.verified("/target", target.secret);
      return got.length > 0 && got;
    },
  );
  assertEquals(message.type, "webhook.test");
  assertEquals(message.webhookId, `msg_${target.id}_test_${deliveryId}`);
  assertEquals(message.data, { webhookId: target.id, deliveryId } as never);
  const [attempt] = await eventually("its outcome is kept", async () => {
    const all = await deliveries(svc, target.id);
    return all[0]?.outcome === "delivered" && all;
  });
  assertEquals(
    [attempt.id, attempt.type, attempt.recordId, attempt.attempt],
    [deliveryId, "webhook.test", null, 1],
  );
  // Sent once: nothing more comes; the other endpoint got nothing.
  await new Promise((r) => setTimeout(r, 300));
  assertEquals(receiver.received.filter((r) => r.path === "/target").length, 1);
  assertEquals(receiver.received.filter((r) => r.path === "/quiet").length, 0);
  assertEquals(await deliveries(svc, quiet.id), []);

  // An endpoint failing at a record: the test is sent, answered 500 and
  // kept as failed, and the held record waits for its own time.
  const down = await createHook(svc, receiver.url("/down"));
  await someUserCreated(svc);
  await eventually(
    "the record fails",
    async () => (await hook(svc, down.id)).health === "failing",
  );
  const tested = await svc.admin.post("/api/webhooks/{id}/test", {
    params: { path: { id: down.id } },
  });
  assert(tested.ok);
  const after = await eventually("the test is tried", async () => {
    const all = await deliveries(svc, down.id);
    return all.find((a) => a.type === "webhook.test")?.outcome === "failed" &&
      all;
  });
  assertEquals(
    after.map((a) => [a.type, a.outcome, a.status]),
    [["webhook.test", "failed", 500], ["record", "failed", 500]],
  );
  const still = await hook(svc, down.id);
  assertEquals([still.health, still.failures], ["failing", 1]);

  // A disabled endpoint is sent a test too (to check its receiver first).
  await svc.sql`update webhook_endpoints set disabled_at = now()
    where id = ${target.id}`;
  const again = await svc.admin.post("/api/webhooks/{id}/test", {
    params: { path: { id: target.id } },
  });
  assert(again.ok);
  await eventually(
    "the disabled endpoint's test arrives",
    () =>
      receiver.verified("/target", target.secret)
        .filter((m) => m.type === "webhook.test").length === 2,
  );
  assertEquals(
    await svc.admin.post("/api/webhooks/{id}/test", {
      params: { path: { id: 424242 } },
    }),
    { ok: false, status: 404, error: "Webhook not found" },
  );
});
