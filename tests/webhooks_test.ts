/**
 * Webhooks: management through the API (admins only, the secret shown
 * once, the 400/404 of the contract), and delivery to a real receiver that
 * verifies every request with the `standardwebhooks` library: every record
 * once, in order, as GET /api/audit shows it; retries after failures and
 * timeouts on the configured schedule; disabling after the retry budget and
 * enabling again; no delivery to refused addresses, nor through redirects.
 */
import {
  type AuditRecord,
  type WebhookMessage,
  webhooks,
} from "@user-admin/client";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { receiver } from "../clients/examples/receiver.ts";
import { auditEvents } from "../src/audit/events.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { createLogger } from "../src/log.ts";
import {
  closeKept,
  deliver,
  type KeptConnection,
} from "../src/webhooks/deliver.ts";
import { startWebhookWorker } from "../src/webhooks/worker.ts";
import { writeRecords } from "./audit_support.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { withTool } from "./support/conditions.ts";
import {
  startService as startOwnService,
  type TestService,
} from "./support/service.ts";
import { eventually, startReceiver } from "./webhook_support.ts";

/**
 * A service of the test's own, bcrypt at its cheapest cost: its work is
 * not this file's subject.
 */
const startService = (env: Record<string, string> = {}) =>
  startOwnService(env, { bcryptCost: 4 });

/** Loopback receivers, fast polls, and a short schedule the tests can wait out. */
const FAST = {
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_POLL_MS: "50",
  WEBHOOK_RETRY_SCHEDULE: "300,600,900",
  WEBHOOK_TIMEOUT_MS: "1000",
};

async function createHook(
  svc: TestService,
  body: { url: string; actions?: string[]; description?: string },
) {
  const res = await svc.adminFetch("/api/webhooks", {
    method: "POST",
    body: JSON.stringify(body),
  });
  const json = await res.json();
  assertEquals(res.status, 201, JSON.stringify(json));
  assertMatch(json.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  return json as { id: number; secret: string; status: string };
}

async function auditTrail(svc: TestService): Promise<AuditRecord[]> {
  const res = await svc.adminFetch("/api/audit?limit=1000");
  assertEquals(res.status, 200);
  return (await res.json()).reverse();
}

async function attempts(svc: TestService, id: number) {
  const res = await svc.adminFetch(`/api/webhooks/${id}/deliveries`);
  assertEquals(res.status, 200);
  return await res.json() as {
    recordId: number;
    attempt: number;
    outcome: string;
    status: number | null;
    error: string | null;
    responseExcerpt: string | null;
  }[];
}

Deno.test("every record after creation is delivered once, in order, signed, as the trail shows it; the secret is shown once", async () => {
  await using receiver = startReceiver();
  await using svc = await startService(FAST);
  const hook = await createHook(svc, { url: receiver.url("/all") });
  const filtered = await createHook(svc, {
    url: receiver.url("/roles"),
    actions: ["user.role_changed"],
    description: "roles only",
  });
  await writeRecords(svc.store, 30);
  const trail = await auditTrail(svc);
  const after = trail.filter((r) => r.id > trail[0].id);
  const created = trail.find((t) => t.action === "webhook.created")!;
  await eventually(
    "all delivered",
    () =>
      receiver.received.some((r) =>
        r.path === "/all" && JSON.parse(r.body).data.id === trail.at(-1)!.id
      ),
  );
  // Every record sealed after its creation: from its own record on, or
  // from a record committed before it and sealed just after (the login's).
  const first = JSON.parse(
    receiver.received.find((r) => r.path === "/all")!.body,
  ).data.id;
  assert(
    first <= created.id,
    `first delivered ${first}, created ${created.id}`,
  );
  const expected = trail.filter((r) => r.id >= first);
  const messages = receiver.verified("/all", hook.secret);
  assertEquals(messages.map((m) => m.data.id), expected.map((r) => r.id));
  assertEquals(messages.map((m) => m.data), expected);
  assertEquals(
    messages.map((m) => [m.type, m.timestamp]),
    expected.map((r) => [r.action, r.time]),
  );
  assertEquals(
    new Set(messages.map((m) => m.webhookId)).size,
    messages.length,
  );
  const roles = after.filter((r) => r.action === "user.role_changed");
  assert(roles.length >= 3);
  await eventually(
    "role changes delivered",
    () =>
      receiver.received.filter((r) => r.path === "/roles").length >=
        roles.length,
  );
  assertEquals(
    receiver.verified("/roles", filtered.secret).map((m) => m.data.id),
    roles.map((r) => r.id),
  );
  // Another endpoint's secret does not verify these.
  let forged = false;
  try {
    receiver.verified("/all", filtered.secret);
  } catch {
    forged = true;
  }
  assert(forged, "a delivery verified with another endpoint's secret");

  // The secret is in the creation's answer only.
  for (const path of ["/api/webhooks", `/api/webhooks/${hook.id}`]) {
    const res = await svc.adminFetch(path);
    assertEquals(res.status, 200);
    const text = await res.text();
    assert(!text.includes("whsec_") && !text.includes("secret"), text);
  }
  const got = await (await svc.adminFetch(`/api/webhooks/${filtered.id}`))
    .json();
  assertEquals(got.actions, ["user.role_changed"]);
  assertEquals(got.description, "roles only");
  assertEquals(got.status, "active");
  // Idle, nothing more arrives (the count holds while the trail does).
  assertEquals(
    receiver.received.filter((r) => r.path === "/all").length,
    messages.length,
  );
});

Deno.test("a failing record holds back the later ones, is retried on the schedule and then delivered; a timeout is a failure", async () => {
  await using receiver = startReceiver();
  await using svc = await startService({
    ...FAST,
    WEBHOOK_RETRY_SCHEDULE: "100,200,300",
  });
  // Three 500s, then a request that outlasts the 1 s timeout, then 2xx.
  receiver.answer("/flaky", async (_, n) => {
    if (n <= 3) return 500;
    if (n === 4) await new Promise((r) => setTimeout(r, 1_500));
    return 204;
  });
  const hook = await createHook(svc, {
    url: receiver.url("/flaky"),
    actions: ["user.deleted", "logout"],
  });
  const actor = { id: 1, username: "admin" };
  const ctx = { requestId: null, clientAddress: null, via: null };
  await svc.store.audit.record(
    auditEvents.userDeleted(actor, { id: 7, username: "u7" }, ctx),
    NO_DEADLINE,
  );
  await svc.store.audit.record(auditEvents.logout(actor, ctx), NO_DEADLINE);
  const trail = await auditTrail(svc);
  const [first, second] = trail.slice(-2);
  await eventually(
    "both delivered",
    () => receiver.received.filter((r) => r.path === "/flaky").length >= 6,
  );
  const messages = receiver.verified("/flaky", hook.secret);
  // Five tries at the first (the same webhook-id each time), then the second.
  assertEquals(messages.map((m) => m.data.id), [
    first.id,
    first.id,
    first.id,
    first.id,
    first.id,
    second.id,
  ]);
  assertEquals(new Set(messages.slice(0, 5).map((m) => m.webhookId)).size, 1);
  // The gaps follow the schedule: 100, 200, 300 ms, then 300 again (the
  // last repeats) after the timed-out try.
  const times = receiver.received.filter((r) => r.path === "/flaky")
    .map((r) => r.at);
  const gaps = times.slice(1, 5).map((t, i) => t - times[i]);
  const planned = [100, 200, 300, 1_000 + 300];
  gaps.forEach((gap, i) =>
    assert(
      gap >= planned[i] - 50 && gap < planned[i] + 1_500,
      `gap ${i + 1} was ${Math.round(gap)} ms, planned ${planned[i]}`,
    )
  );
  await eventually(
    "attempts kept",
    async () => (await attempts(svc, hook.id)).length === 6,
  );
  const kept = await attempts(svc, hook.id);
  assertEquals(
    kept.map((a) => [a.recordId, a.attempt, a.outcome, a.status]),
    [
      [second.id, 1, "delivered", 204],
      [first.id, 5, "delivered", 204],
      [first.id, 4, "failed", null],
      [first.id, 3, "failed", 500],
      [first.id, 2, "failed", 500],
      [first.id, 1, "failed", 500],
    ],
  );
  assertMatch(kept[2].error!, /no answer within 1000 ms/);
  assertEquals(kept[3].responseExcerpt, "answered 500");
});

Deno.test("after the retry budget the endpoint is disabled and webhook.disabled recorded; enabling resumes delivery", async () => {
  await using receiver = startReceiver();
  await using svc = await startService({
    ...FAST,
    WEBHOOK_RETRY_SCHEDULE: "200",
    WEBHOOK_RETRY_BUDGET_MS: "1000",
  });
  let up = false;
  receiver.answer("/down", () => (up ? 200 : 503));
  const hook = await createHook(svc, {
    url: receiver.url("/down"),
    actions: ["logout"],
  });
  const ctx = { requestId: null, clientAddress: null, via: null };
  await svc.store.audit.record(
    auditEvents.logout({ id: 1, username: "admin" }, ctx),
    NO_DEADLINE,
  );
  await svc.store.audit.seal();
  const disabled = await eventually("disabled", async () => {
    const trail = await auditTrail(svc);
    return trail.find((r) => r.action === "webhook.disabled");
  });
  assertEquals(disabled.actor, null);
  assertEquals(disabled.details.webhookId, hook.id);
  const got = await (await svc.adminFetch(`/api/webhooks/${hook.id}`)).json();
  assertEquals(got.status, "disabled");
  const tries = receiver.received.length;
  assert(tries >= 3, `retried within the budget: ${tries}`);
  // Disabled: no more attempts.
  await new Promise((r) => setTimeout(r, 600));
  assertEquals(receiver.received.length, tries);

  up = true;
  const res = await svc.adminFetch(`/api/webhooks/${hook.id}/enable`, {
    method: "POST",
  });
  assertEquals(res.status, 200);
  assertEquals((await res.json()).status, "active");
  await eventually(
    "delivered after enabling",
    () => receiver.received.length > tries,
  );
  const messages = receiver.verified("/down", hook.secret);
  assertEquals(messages.at(-1)!.type, "logout");
  const trail = await auditTrail(svc);
  const enabled = trail.find((r) => r.action === "webhook.enabled")!;
  assertEquals(enabled.actor?.username, "admin");
  assertEquals(enabled.details, { webhookId: hook.id, url: got.url });
});

Deno.test("refused targets: private literals at creation, a loopback host name at each delivery, redirects", async (t) => {
  await using receiver = startReceiver();
  await using svc = await startService({
    WEBHOOK_POLL_MS: "50",
    WEBHOOK_RETRY_SCHEDULE: "200",
  });
  await t.step("literal addresses and other schemes: 400", async () => {
    const port = new URL(receiver.url("/")).port;
    for (
      const url of [
        `http://127.0.0.1:${port}/x`,
        "http://10.0.0.1/x",
        `http://[::1]:${port}/x`,
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://2130706433/",
        "ftp://example.com/",
        "http://user:pass@example.com/",
        "not a url",
      ]
    ) {
      const res = await svc.adminFetch("/api/webhooks", {
        method: "POST",
        body: JSON.stringify({ url }),
      });
      assertEquals(
        [url, res.status, await res.json()],
        [url, 400, { error: "Invalid webhook" }],
      );
    }
  });

  await t.step(
    "a name resolving to loopback: accepted, never delivered, retried",
    async () => {
      const port = new URL(receiver.url("/")).port;
      const hook = await createHook(svc, {
        url: `http://localhost:${port}/sneaky`,
      });
      await svc.store.audit.record(
        auditEvents.logout({ id: 1, username: "admin" }, {
          requestId: null,
          clientAddress: null,
          via: null,
        }),
        NO_DEADLINE,
      );
      await svc.store.audit.seal();
      const tried = await eventually("retried", async () => {
        const a = await attempts(svc, hook.id);
        return a.length >= 2 && a;
      });
      for (const a of tried) {
        assertEquals(a.outcome, "failed");
        assertMatch(a.error!, /^address not allowed: (127\.0\.0\.1|::1)$/);
      }
      assertEquals(receiver.received.length, 0);
    },
  );
});

Deno.test("a redirect is not followed: it fails and is retried", async () => {
  await using receiver = startReceiver();
  await using svc = await startService(FAST);
  receiver.answer(
    "/moved",
    () =>
      new Response(null, {
        status: 307,
        headers: { Location: receiver.url("/elsewhere") },
      }),
  );
  const hook = await createHook(svc, { url: receiver.url("/moved") });
  const tried = await eventually("retried", async () => {
    const a = await attempts(svc, hook.id);
    return a.length >= 2 && a;
  });
  assertEquals(tried[0].status, 307);
  assertEquals(tried[0].error, "redirect not followed");
  assertEquals(
    receiver.received.filter((r) => r.path === "/elsewhere").length,
    0,
  );
});

Deno.test("ten receivers hanging until their timeout do not delay another endpoint: each record reaches it within 1 s", async () => {
  await using receiver = startReceiver();
  // The default 10 s timeout: the hanging ones are held that long.
  await using svc = await startService({
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_POLL_MS: "50",
  });
  const { promise: released, resolve: release } = Promise.withResolvers<
    void
  >();
  try {
    const healthy = await createHook(svc, {
      url: receiver.url("/healthy"),
      actions: ["logout"],
    });
    for (let i = 0; i < 10; i++) {
      receiver.answer(`/hang${i}`, async () => {
        await released;
        return 200;
      });
      await createHook(svc, { url: receiver.url(`/hang${i}`) });
    }
    await eventually(
      "every hanging receiver holds a request",
      () =>
        new Set(
          receiver.received.filter((r) => r.path.startsWith("/hang"))
            .map((r) => r.path),
        ).size === 10,
    );
    const ctx = { requestId: null, clientAddress: null, via: null };
    for (let i = 1; i <= 5; i++) {
      const started = performance.now();
      await svc.store.audit.record(
        auditEvents.logout({ id: 1, username: "admin" }, ctx),
        NO_DEADLINE,
      );
      const arrived = await eventually(
        `record ${i} at the healthy endpoint`,
        () =>
          receiver.received.filter((r) => r.path === "/healthy").length ===
            i && performance.now(),
        5_000,
      );
      const ms = arrived - started;
      assert(ms < 1_000, `record ${i} arrived after ${Math.round(ms)} ms`);
    }
    assertEquals(
      receiver.verified("/healthy", healthy.secret).map((m) => m.type),
      Array(5).fill("logout"),
    );
  } finally {
    release();
  }
});

Deno.test("management: admins only, 404 for unknown ids, 400 for bad bodies, deletion stops delivery and is recorded", async () => {
  await using receiver = startReceiver();
  await using svc = await startService(FAST);
  const { client: viewer } = await svc.userClient("viewer");
  const anonymous = svc.client();
  const create = { body: { url: receiver.url("/x") } };
  assertEquals(await viewer.post("/api/webhooks", create), {
    ok: false,
    status: 403,
    error: "Forbidden",
  });
  assertEquals(await anonymous.post("/api/webhooks", create), {
    ok: false,
    status: 401,
    error: "Unauthorised",
  });
  assertEquals((await viewer.get("/api/webhooks")).status, 403);
  for (const path of ["/api/webhooks/999", "/api/webhooks/abc"]) {
    for (
      const [method, suffix] of [
        ["GET", ""],
        ["DELETE", ""],
        ["GET", "/deliveries"],
        ["POST", "/enable"],
      ]
    ) {
      const res = await svc.adminFetch(path + suffix, { method });
      assertEquals(
        [method, path + suffix, res.status, await res.json()],
        [method, path + suffix, 404, { error: "Webhook not found" }],
      );
    }
  }
  for (
    const body of [
      "{}",
      "not json",
      JSON.stringify({ url: 5 }),
      JSON.stringify({ url: "" }),
      JSON.stringify({ url: receiver.url("/x"), actions: ["user.nope"] }),
      JSON.stringify({ url: receiver.url("/x"), actions: [] }),
      JSON.stringify({ url: receiver.url("/x"), description: "x".repeat(501) }),
    ]
  ) {
    const res = await svc.adminFetch("/api/webhooks", { method: "POST", body });
    assertEquals([body, res.status, await res.json()], [
      body,
      400,
      { error: "Invalid webhook" },
    ]);
  }
  const res = await svc.adminFetch("/api/webhooks/1/deliveries?limit=0");
  assertEquals(await res.json(), { error: "Invalid query parameter: limit" });

  const created = await svc.admin.post("/api/webhooks", create);
  assert(created.ok && created.status === 201);
  const id = created.data.id;
  await eventually(
    "its own record delivered",
    () => receiver.received.length >= 1,
  );
  assertEquals(
    await svc.admin.delete("/api/webhooks/{id}", { params: { path: { id } } }),
    { ok: true, status: 200, data: { ok: true } },
  );
  const trail = await auditTrail(svc);
  const deleted = trail.find((r) => r.action === "webhook.deleted")!;
  assertEquals(deleted.details, { webhookId: id, url: receiver.url("/x") });
  const count = receiver.received.length;
  await writeRecords(svc.store, 5);
  await new Promise((r) => setTimeout(r, 500));
  assertEquals(receiver.received.length, count);
  assertEquals((await svc.admin.get("/api/webhooks")).status, 200);
});

Deno.test("two workers on one database share the endpoints and deliver each record exactly once", async () => {
  // Every answer takes a moment, and each worker takes one endpoint at a
  // time: while one works an endpoint the other takes the next, so both
  // deliver (counted below), and neither takes what the other holds.
  await using receiver = startReceiver();
  const oneAtATime = { ...FAST, WEBHOOK_ENDPOINTS_AT_ONCE: "1" };
  await using svc = await startService(oneAtATime);
  // A second instance's worker: its own loop over the same queue.
  let bySecond = 0;
  const second = startWebhookWorker(
    svc.store,
    { ...svc.config, WEBHOOK_ENDPOINTS_AT_ONCE: 1 },
    createLogger("silent"),
    { counted: (outcome) => outcome === "delivered" && bySecond++ },
  );
  try {
    const hooks = [];
    for (let i = 0; i < 4; i++) {
      hooks.push(await createHook(svc, { url: receiver.url(`/h${i}`) }));
      receiver.answer(`/h${i}`, async () => {
        await new Promise((r) => setTimeout(r, 10));
        return 200;
      });
    }
    await writeRecords(svc.store, 60);
    const trail = await auditTrail(svc);
    for (const [i, hook] of hooks.entries()) {
      const created = trail.filter((r) => r.action === "webhook.created")[i];
      await eventually(
        `all delivered to /h${i}`,
        () =>
          receiver.received.some((r) =>
            r.path === `/h${i}` &&
            JSON.parse(r.body).data.id === trail.at(-1)!.id
          ),
      );
      // From a record sealed at or before its creation's own, every one.
      const got = receiver.verified(`/h${i}`, hook.secret).map((m) =>
        m.data.id
      );
      assert(got[0] <= created.id, `${got[0]} after ${created.id}`);
      assertEquals(
        got,
        trail.filter((r) => r.id >= got[0]).map((r) => r.id),
      );
    }
    await new Promise((r) => setTimeout(r, 300));
    const ids = receiver.received.map((r) => r.headers["webhook-id"]);
    assertEquals(ids.length, new Set(ids).size, "a record delivered twice");
    assert(bySecond > 0, "the second worker delivered nothing");
    assert(bySecond < ids.length, "the service's own worker delivered nothing");
  } finally {
    await second.stop();
  }
});

Deno.test("a worker that stops ends its delivery under way at once, and records no attempt for it", async () => {
  await using receiver = startReceiver();
  // Each worker takes one endpoint at a time, and a hanging receiver holds
  // it for the whole 10 s timeout: so each of the two holds one.
  await using svc = await startService({
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_POLL_MS: "50",
    WEBHOOK_ENDPOINTS_AT_ONCE: "1",
  });
  const second = startWebhookWorker(
    svc.store,
    { ...svc.config, WEBHOOK_ENDPOINTS_AT_ONCE: 1 },
    createLogger("silent"),
  );
  const { promise: released, resolve: release } = Promise.withResolvers<
    void
  >();
  let stopped = false;
  try {
    const hooks = [];
    for (const path of ["/hang0", "/hang1"]) {
      receiver.answer(path, async () => {
        await released;
        return 200;
      });
      hooks.push(await createHook(svc, { url: receiver.url(path) }));
    }
    await eventually(
      "both receivers hold a request",
      () => new Set(receiver.received.map((r) => r.path)).size === 2,
    );
    const started = performance.now();
    await second.stop();
    stopped = true;
    const ms = performance.now() - started;
    assert(ms < 2_000, `the stop waited ${Math.round(ms)} ms for a receiver`);
    // The stopped attempt is sent again later, not counted as a failure;
    // the other worker's is still under way.
    for (const hook of hooks) assertEquals(await attempts(svc, hook.id), []);
  } finally {
    release();
    if (!stopped) await second.stop();
  }
});

Deno.test("the receiver example of clients/README.md verifies each delivery, refuses a forged one and takes a repeated one once", async () => {
  const readme = await Deno.readTextFile(
    new URL("../clients/README.md", import.meta.url),
  );
  const example = await Deno.readTextFile(
    new URL("../clients/examples/receiver.ts", import.meta.url),
  );
  assert(
    readme.includes("```ts\n" + example + "```\n"),
    "clients/README.md's copy of clients/examples/receiver.ts differs from the file: paste it again",
  );
  await using svc = await startService(FAST);
  const got: WebhookMessage[] = [];
  let handler: (req: Request) => Promise<Response> = () =>
    Promise.resolve(new Response(null, { status: 503 }));
  const requests: Request[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => {
      requests.push(req.clone());
      return handler(req);
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/hook`;
  const created = await webhooks(svc.admin).create({
    url,
    actions: ["logout"],
  });
  assert(created.ok, JSON.stringify(created));
  handler = receiver(created.data.secret, (m) => void got.push(m));
  const ctx = { requestId: null, clientAddress: null, via: null };
  await svc.store.audit.record(
    auditEvents.logout({ id: 1, username: "admin" }, ctx),
    NO_DEADLINE,
  );
  await eventually("delivered", () => got.length === 1);
  assertEquals(got[0].type, "logout");
  const delivered = requests[0];
  const body = await delivered.text();
  // The same delivery again (at least once): answered 204, handed on once.
  const again = await handler(
    new Request(url, { method: "POST", headers: delivered.headers, body }),
  );
  assertEquals(again.status, 204);
  assertEquals(got.length, 1);
  // A changed body does not verify.
  const forged = await handler(
    new Request(url, {
      method: "POST",
      headers: delivered.headers,
      body: body.replace('"logout"', '"user.deleted"'),
    }),
  );
  assertEquals(forged.status, 401);
  assertEquals(got.length, 1);
  // The attempt is kept once the receiver's answer is in.
  const listed = await eventually("the attempt kept", async () => {
    const listed = await webhooks(svc.admin).deliveries(created.data.id);
    assert(listed.ok);
    return listed.data.length > 0 && listed.data;
  });
  assertEquals(listed.map((a) => a.outcome), ["delivered"]);
});

Deno.test("metrics: attempts by outcome, the queue's depth and its oldest record's age", async () => {
  await using receiver = startReceiver();
  await using svc = await startService({ ...FAST, METRICS_PORT: "0" });
  let up = false;
  receiver.answer("/m", () => (up ? 200 : 500));
  const scrape = async () => {
    const text = await (await fetch(svc.metricsUrl!)).text();
    const value = (series: string) =>
      Number(
        new RegExp(`^${series.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m")
          .exec(text)?.[1],
      );
    return {
      delivered: value(
        'useradmin_webhook_deliveries_total{outcome="delivered"}',
      ),
      failed: value('useradmin_webhook_deliveries_total{outcome="failed"}'),
      queue: value("useradmin_webhook_queue_records"),
      oldest: value("useradmin_webhook_oldest_undelivered_seconds"),
    };
  };
  assertEquals(await scrape(), {
    delivered: 0,
    failed: 0,
    queue: 0,
    oldest: 0,
  });
  await createHook(svc, { url: receiver.url("/m") });
  await writeRecords(svc.store, 3);
  const failing = await eventually("a failure counted", async () => {
    const m = await scrape();
    return m.failed >= 1 && m.oldest > 0 && m;
  });
  // Its own webhook.created and the three written wait (and the admin's
  // login, when it was sealed only after the creation).
  assert(failing.queue === 4 || failing.queue === 5, `${failing.queue}`);
  assertEquals(failing.delivered, 0);
  up = true;
  const done = await eventually("delivered", async () => {
    const m = await scrape();
    return m.queue === 0 && m;
  });
  assertEquals([done.delivered, done.oldest], [failing.queue, 0]);
});

const OPENSSL = "/usr/bin/openssl";
const openssl = {
  what: `openssl at ${OPENSSL}`,
  present: await Deno.stat(OPENSSL).then(() => true, () => false),
  install: "apt-get install -y openssl",
};

async function run(args: string[]) {
  const out = await new Deno.Command(OPENSSL, { args, stderr: "null" })
    .output();
  assert(out.success, `openssl ${args[0]} failed`);
}

/** A test authority in `dir`, and a certificate it signed for `name`, with its key. */
async function certificate(dir: string, name: string) {
  const f = (ext: string) => `${dir}/${name}.${ext}`;
  const ca = `${dir}/ca`;
  if (!await Deno.stat(`${ca}.pem`).then(() => true, () => false)) {
    await run([
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"],
      ...["-keyout", `${ca}.key`, "-out", `${ca}.pem`, "-subj", "/CN=test"],
    ]);
  }
  await run([
    ...["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("key")],
    ...["-out", f("csr"), "-subj", `/CN=${name}`],
  ]);
  await Deno.writeTextFile(
    f("ext"),
    `subjectAltName=DNS:${name}\nbasicConstraints=CA:FALSE\n`,
  );
  await run([
    ...["x509", "-req", "-in", f("csr"), "-CA", `${ca}.pem`],
    ...["-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "1"],
    ...["-out", f("pem"), "-extfile", f("ext")],
  ]);
  return {
    cert: await Deno.readTextFile(f("pem")),
    key: await Deno.readTextFile(f("key")),
    ca: await Deno.readTextFile(`${ca}.pem`),
  };
}

Deno.test(withTool(
  "https: the connection goes to the checked address, and TLS still verifies the host's name",
  openssl,
  async () => {
    const dir = await Deno.makeTempDir();
    try {
      const good = await certificate(dir, "localhost");
      const other = await certificate(dir, "other.example");
      const bodies: string[] = [];
      const serve = (tls: { cert: string; key: string }) =>
        Deno.serve(
          {
            hostname: "127.0.0.1",
            port: 0,
            onListen: () => {},
            cert: tls.cert,
            key: tls.key,
          },
          async (req) => {
            bodies.push(await req.text());
            return new Response("ok");
          },
        );
      await using right = serve(good);
      await using wrong = serve(other);
      const options = {
        timeoutMs: 5_000,
        allowPrivate: true,
        caCerts: [good.ca],
      };
      const message = {
        secret: `whsec_${btoa("k".repeat(32))}`,
        id: "msg_1_1",
      };
      // `localhost` resolves to 127.0.0.1, where the certificate names it.
      const ok = await deliver({
        ...message,
        url: `https://localhost:${right.addr.port}/hook`,
        body: '{"a":1}',
      }, options);
      assertEquals([ok.ok, ok.status, ok.responseExcerpt], [true, 200, "ok"]);
      // A certificate for another name: the handshake fails, nothing is sent.
      const refused = await deliver({
        ...message,
        url: `https://localhost:${wrong.addr.port}/hook`,
        body: '{"b":2}',
      }, options);
      assertEquals([refused.ok, refused.status], [false, null]);
      assertEquals(bodies, ['{"a":1}']);
      // Without the switch, the name's loopback address is refused first.
      const blocked = await deliver({
        ...message,
        url: `https://localhost:${right.addr.port}/hook`,
        body: '{"c":3}',
      }, { ...options, allowPrivate: false });
      assertMatch(blocked.error!, /^address not allowed: /);
      assertEquals(bodies, ['{"a":1}']);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
));

Deno.test("a kept connection the receiver closed meanwhile: the delivery goes over a new one", async () => {
  // A receiver that answers one request per connection, then closes it
  // without saying so.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      connections++;
      const buffer = new Uint8Array(4096);
      await conn.read(buffer);
      await conn.write(
        new TextEncoder().encode(
          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ),
      );
      await new Promise((r) => setTimeout(r, 20));
      conn.close();
    }
  })();
  const kept: KeptConnection = {};
  const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/h`;
  const message = { secret: `whsec_${btoa("k".repeat(32))}`, url, body: "{}" };
  const options = { timeoutMs: 2_000, allowPrivate: true, kept };
  const first = await deliver({ ...message, id: "msg_1_1" }, options);
  assert(kept.client, "the connection is kept after a complete answer");
  await new Promise((r) => setTimeout(r, 100));
  const second = await deliver({ ...message, id: "msg_1_2" }, options);
  assertEquals([first.ok, second.ok, second.status], [true, true, 200]);
  assertEquals(connections, 2);
  closeKept(kept);
  listener.close();
  await serving.catch(() => {});
});

/**
 * A node:http receiver: `res.writeHead(200); res.end(text)` answers with a
 * chunked body (no Content-Length). Counts the connections it accepted.
 */
async function startNodeReceiver(answer = "ok") {
  const bodies: string[] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => body += chunk);
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(200);
      res.end(answer);
    });
  });
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/chunked`,
    bodies,
    connections: () => connections,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

Deno.test("a receiver answering 200 with a chunked body is recorded as delivered within 1 s", async () => {
  await using node = await startNodeReceiver();
  // The default 10 s timeout: an answer read only at the timeout shows.
  await using svc = await startService({
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_POLL_MS: "50",
  });
  const hook = await createHook(svc, { url: node.url, actions: ["logout"] });
  const ctx = { requestId: null, clientAddress: null, via: null };
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    await svc.store.audit.record(
      auditEvents.logout({ id: 1, username: "admin" }, ctx),
      NO_DEADLINE,
    );
    await svc.store.audit.seal();
    const kept = await eventually(
      `delivery ${i + 1} recorded`,
      async () => {
        const a = await attempts(svc, hook.id);
        return a.length === i + 1 && a;
      },
      1_000,
    );
    const ms = performance.now() - started;
    assert(ms < 1_000, `recorded after ${Math.round(ms)} ms`);
    assertEquals(
      [kept[0].outcome, kept[0].status, kept[0].responseExcerpt],
      ["delivered", 200, "ok"],
    );
  }
});

Deno.test("chunked and longer answers: the excerpt is the body's first 256 bytes, and one connection carries the deliveries to a URL", async () => {
  const text = "é".repeat(200); // 400 bytes: the excerpt cuts inside a character
  await using node = await startNodeReceiver(text);
  const kept: KeptConnection = {};
  const options = { timeoutMs: 5_000, allowPrivate: true, kept };
  const message = { secret: `whsec_${btoa("k".repeat(32))}`, url: node.url };
  for (let i = 0; i < 3; i++) {
    const got = await deliver(
      { ...message, id: `msg_1_${i}`, body: `{"n":${i}}` },
      options,
    );
    assertEquals([got.ok, got.status, got.error], [true, 200, null]);
    assertEquals(got.responseExcerpt, "é".repeat(128));
  }
  assertEquals(node.bodies, ['{"n":0}', '{"n":1}', '{"n":2}']);
  assertEquals(node.connections(), 1);
  closeKept(kept);
});
