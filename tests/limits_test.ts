/**
 * Limits that keep one admin's integrations from exhausting the service:
 * at most 100 webhook endpoints in all, held by concurrent creations too,
 * and at most 100 open change-feed streams per user on one instance.
 * Streams are read with plain fetch over the port, never through the
 * harness's recording fetch, which reads every answer to its end.
 */
import { WEBHOOKS_LOCK } from "../src/db/webhooks.ts";
import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({ WEBHOOK_ALLOW_PRIVATE: "true" }, {
  bcryptCost: 4,
});

/** Records of this action never come from a request: nothing is delivered. */
const QUIET = ["admin.recovered" as const];

/** `n` endpoints written straight into the table. */
async function insertWebhooks(svc: TestService, n: number) {
  await svc.sql`
    insert into webhook_endpoints (url, actions, secret, cursor)
    select 'http://127.0.0.1:9/bulk/' || i, ${QUIET}, 'whsec_x',
      (select head_id from audit_chain where singleton)
    from generate_series(1, ${n}) as i`;
}

const webhookCount = async (svc: TestService) =>
  (await svc.sql<{ n: number }[]>`
    select count(*)::int as n from webhook_endpoints`)[0].n;

const createWebhook = (svc: TestService, path: string) =>
  svc.admin.POST("/api/webhooks", {
    body: { url: `http://127.0.0.1:9/${path}`, actions: QUIET },
  });

Deno.test("the 101st webhook endpoint answers 400 Too many webhooks; deleting one makes room", async () => {
  const svc = await service();
  await svc.sql`delete from webhook_endpoints`;
  await insertWebhooks(svc, 99);
  const last = await createWebhook(svc, "last");
  assertEquals(last.response.status, 201);
  const over = await createWebhook(svc, "over");
  assertEquals(over.response.status, 400);
  assertEquals(over.error, { error: "Too many webhooks" });
  assertEquals(await webhookCount(svc), 100);

  const removed = await svc.admin.DELETE("/api/webhooks/{id}", {
    params: { path: { id: last.data!.id } },
  });
  assertEquals(removed.response.status, 200);
  assertEquals((await createWebhook(svc, "again")).response.status, 201);
  await svc.sql`delete from webhook_endpoints`;
});

/** The lock webhook creations take in turn, held by the test for `ms`. */
const holdCreationsLock = (svc: TestService, ms: number) =>
  svc.sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${WEBHOOKS_LOCK.toString()}::bigint)`;
    await new Promise((done) => setTimeout(done, ms));
  });

Deno.test("a webhook creation waits its turn past one statement's timeout, within its request's deadline; past that it answers 500 and creates nothing", async () => {
  const svc = await service();
  await svc.sql`delete from webhook_endpoints`;
  // The defaults: 4.5 s a request, 1.5 s a statement, so a write begins
  // within 3 s. Others' creations hold the lock for 2.2 s.
  let held = holdCreationsLock(svc, 2_200);
  await new Promise((done) => setTimeout(done, 100));
  const waited = await createWebhook(svc, "waited");
  await held;
  assertEquals(waited.response.status, 201);
  // Held past the deadline: its 500, and nothing written once the lock is free.
  held = holdCreationsLock(svc, 5_000);
  await new Promise((done) => setTimeout(done, 100));
  const started = performance.now();
  const late = await createWebhook(svc, "late");
  const tookMs = performance.now() - started;
  assertEquals([late.response.status, late.error], [500, {
    error: "Failed to create webhook",
  }]);
  assert(tookMs < 4_600, `answered after ${Math.round(tookMs)} ms`);
  await held;
  assertEquals(await webhookCount(svc), 1);
  await svc.sql`delete from webhook_endpoints`;
});

Deno.test("concurrent webhook creations never pass 100 endpoints together", async () => {
  const svc = await service();
  await svc.sql`delete from webhook_endpoints`;
  await insertWebhooks(svc, 95);
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) => createWebhook(svc, `race/${i}`)),
  );
  const statuses = answers.map((a) => a.response.status).sort();
  assertEquals(statuses, [...Array(5).fill(201), ...Array(7).fill(400)]);
  for (const a of answers.filter((a) => a.response.status === 400)) {
    assertEquals(a.error, { error: "Too many webhooks" });
  }
  assertEquals(await webhookCount(svc), 100);
  const created = await svc.admin.GET("/api/audit", {
    params: { query: { action: "webhook.created" } },
  });
  const races = created.data!.filter((r) =>
    String(r.details.url).includes("/race/")
  );
  assertEquals(races.length, 5);
  await svc.sql`delete from webhook_endpoints`;
});

/** Opens a stream over the port; answers the response, its body unread. */
const openStream = (svc: TestService, cookie: string, method = "GET") =>
  fetch(`${svc.baseUrl}/api/audit/stream`, {
    method,
    headers: { cookie },
  });

Deno.test("a user's 101st open change-feed stream answers 429 Too many streams; another user's, and one after a stream ends, open", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const streams: Response[] = [];
  try {
    for (let i = 0; i < 100; i++) {
      const res = await openStream(svc, cookie);
      streams.push(res);
      assertEquals(res.status, 200, `stream ${i + 1}`);
    }
    for (const method of ["GET", "HEAD"]) {
      const over = await openStream(svc, cookie, method);
      assertEquals(over.status, 429, method);
      const body = method === "GET" ? await over.json() : await over.text();
      if (method === "GET") assertEquals(body, { error: "Too many streams" });
    }

    const other = await svc.userClient("admin");
    const otherCookie = await loginCookie(svc, {
      username: other.account.username,
      password: other.password,
    });
    const theirs = await openStream(svc, otherCookie);
    streams.push(theirs);
    assertEquals(theirs.status, 200);

    await streams.shift()!.body!.cancel();
    // The server sees the cancel when the connection closes: asked again
    // until it has.
    const deadline = Date.now() + 10_000;
    let again = await openStream(svc, cookie);
    while (again.status === 429 && Date.now() < deadline) {
      await again.body?.cancel();
      await new Promise((r) => setTimeout(r, 50));
      again = await openStream(svc, cookie);
    }
    streams.push(again);
    assertEquals(again.status, 200);
  } finally {
    await Promise.all(streams.map((s) => s.body?.cancel()));
  }
});
