/**
 * The housekeeping sweep over records of every age, from a minute to ten
 * years, in every table it touches: what production runs every ten minutes
 * runs here every 50 ms with the default retentions, and each rule removes
 * exactly what has expired by its own measure, sweep after sweep. A trail
 * with nothing old enough loses nothing.
 */
import type { Sql } from "postgres";
import { canonicalTail } from "../src/audit/chain.ts";
import { verifyChain } from "../src/audit/verify.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { sleep } from "./support/process.ts";
import {
  onDatabase,
  startService,
  testDatabase,
  type TestService,
} from "./support/service.ts";

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

/**
 * Audit records planted by age (seconds) in a trail that has run for ten
 * years, oldest first, as the chain would hold them; the defaults keep 365
 * days.
 */
const TRAIL = {
  "ten years": 10 * YEAR,
  "two years": 2 * YEAR,
  "366 days": 366 * DAY,
  "365 days and 10 minutes": YEAR + 10 * MINUTE,
  "365 days less an hour": YEAR - HOUR,
  "200 days": 200 * DAY,
  "30 days": 30 * DAY,
  "a day": DAY,
  "an hour": HOUR,
  "a minute": MINUTE,
};
const EXPIRED_RECORDS = [
  "ten years",
  "two years",
  "366 days",
  "365 days and 10 minutes",
];

/** Plants the trail's records in the chain, each with its own time, sealed as the service seals. */
async function plantTrail(sql: Sql) {
  for (const [label, age] of Object.entries(TRAIL)) {
    const tail = canonicalTail({
      action: "login.failed",
      actor: null,
      target: null,
      details: { reason: "unknown_user" },
      requestId: `aged ${label}`,
      clientAddress: null,
      via: null,
    });
    await sql`
      insert into audit_pending (time, tail)
      values (now() - make_interval(secs => ${age}), ${tail})`;
  }
  await sql`select audit_seal(1000)`;
}

/**
 * Resolves once the sweep has run whole at least `n` times after the call:
 * before each of n + 1 rounds an expired session is planted, and each is
 * gone only in a sweep that began after the one that removed the last.
 */
async function sweepsRun(svc: TestService, n: number) {
  for (let i = 0; i <= n; i++) {
    const token = crypto.getRandomValues(new Uint8Array(32));
    await svc.sql`
      insert into sessions (token_hash, user_id, expires_at)
      values (${token}, ${svc.adminAccount.id}, now() - interval '1 second')`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [left] = await svc.sql`
        select 1 from sessions where token_hash = ${token}`;
      if (!left) break;
      assert(Date.now() < deadline, "no sweep removed a session in 30 s");
      await sleep(20);
    }
  }
}

/** The audit records the admin reads, oldest first, by their request id. */
async function trailSeen(svc: TestService): Promise<string[]> {
  const { data, response } = await svc.admin.GET("/api/audit", {
    params: { query: { limit: 1000 } },
  });
  assertEquals(response.status, 200);
  return data!.map((r) => r.requestId ?? "").filter((id) =>
    id.startsWith("aged ")
  ).reverse();
}

async function trailVerifies(svc: TestService) {
  await svc.store.audit.seal();
  const result = await svc.store.audit.walk(verifyChain);
  assert(result.ok, JSON.stringify(result));
}

Deno.test("housekeeping removes only the audit records older than AUDIT_RETENTION_DAYS, sweep after sweep, and the trail still verifies", async () => {
  const db = await testDatabase("migrated");
  await onDatabase(db.env, plantTrail);
  await using svc = await startService(
    { ...db.env, HOUSEKEEPING_INTERVAL_MS: "50" },
    { bcryptCost: 4 },
  );
  const kept = Object.keys(TRAIL).filter((l) => !EXPIRED_RECORDS.includes(l))
    .map((l) => `aged ${l}`);
  await sweepsRun(svc, 2);
  assertEquals(await trailSeen(svc), kept);
  await trailVerifies(svc);
  // Nothing left is old enough: more sweeps remove nothing at all, the
  // service's own records of the start included.
  const [{ before }] = await svc.sql<{ before: number }[]>`
    select count(*)::int as before from audit_events`;
  await sweepsRun(svc, 5);
  const [{ after }] = await svc.sql<{ after: number }[]>`
    select count(*)::int as after from audit_events`;
  assert(after >= before, `${before} records became ${after}`);
  assertEquals(await trailSeen(svc), kept);
  await trailVerifies(svc);
  assertEquals(
    svc.logs.filter((l) => l.msg === "housekeeping failed"),
    [],
  );
});

Deno.test("housekeeping removes expired sessions, ended login windows, expired Idempotency-Key answers and old delivery attempts, and keeps the rest of every age", async () => {
  await using svc = await startService(
    { HOUSEKEEPING_INTERVAL_MS: "50" },
    { bcryptCost: 4 },
  );
  const admin = svc.adminAccount.id;
  // Seconds from now: negative is past.
  const sessions = {
    "ended ten years ago": -10 * YEAR,
    "ended a day ago": -DAY,
    "ended a minute ago": -MINUTE,
    "ends in an hour": HOUR,
    "ends in a day": DAY,
    "ends in a year": YEAR,
  };
  for (const [label, offset] of Object.entries(sessions)) {
    await svc.sql`
      insert into sessions (token_hash, user_id, expires_at, user_agent)
      values (${crypto.getRandomValues(new Uint8Array(32))}, ${admin},
        now() + make_interval(secs => ${offset}), ${label})`;
  }
  // LOGIN_WINDOW_SECONDS is 900: a window that began longer ago has ended.
  const windows = {
    "ten years": 10 * YEAR,
    "a day": DAY,
    "1,000 seconds": 1_000,
    "10 minutes": 10 * MINUTE,
    "a minute": MINUTE,
    "a second": 1,
  };
  for (const [label, age] of Object.entries(windows)) {
    await svc.sql`
      insert into login_failures (username_hash, client, failures, window_started_at)
      values (sha256(convert_to(${label}, 'UTF8')), ${label}, 3,
        now() - make_interval(secs => ${age}))`;
  }
  const answers = {
    "expired ten years ago": -10 * YEAR,
    "expired a minute ago": -MINUTE,
    "expires in a minute": MINUTE,
    "expires in a day": DAY,
  };
  for (const [label, offset] of Object.entries(answers)) {
    await svc.sql`
      insert into idempotency_keys (user_id, key, fingerprint, run_id, expires_at)
      values (${admin}, ${label}, ${new Uint8Array(32)}, 'run',
        now() + make_interval(secs => ${offset}))`;
  }
  // WEBHOOK_ATTEMPT_RETENTION_DAYS is 30. The endpoint is disabled, so no
  // worker delivers to it.
  const [{ id: endpoint }] = await svc.sql<{ id: number }[]>`
    insert into webhook_endpoints (url, secret, cursor, disabled_at)
    values ('https://hooks.example.com/in', 'whsec_x', 0, now())
    returning id`;
  const attempts = {
    "ten years": 10 * YEAR,
    "31 days": 31 * DAY,
    "30 days and an hour": 30 * DAY + HOUR,
    "29 days": 29 * DAY,
    "a day": DAY,
    "a minute": MINUTE,
  };
  for (const [label, age] of Object.entries(attempts)) {
    await svc.sql`
      insert into webhook_attempts (endpoint_id, record_id, attempt, at,
        outcome, error, duration_ms)
      values (${endpoint}, 1, 1, now() - make_interval(secs => ${age}),
        'failed', ${label}, 5)`;
  }

  await sweepsRun(svc, 3);

  const sessionsLeft = await svc.sql<{ label: string }[]>`
    select user_agent as label from sessions
    where user_id = ${admin} and user_agent like 'end%' order by expires_at`;
  assertEquals(sessionsLeft.map((r) => r.label), [
    "ends in an hour",
    "ends in a day",
    "ends in a year",
  ]);
  const windowsLeft = await svc.sql<{ label: string }[]>`
    select client as label from login_failures
    where client in ${svc.sql(Object.keys(windows))}
    order by window_started_at`;
  assertEquals(windowsLeft.map((r) => r.label), [
    "10 minutes",
    "a minute",
    "a second",
  ]);
  const answersLeft = await svc.sql<{ label: string }[]>`
    select key as label from idempotency_keys
    where user_id = ${admin} order by expires_at`;
  assertEquals(answersLeft.map((r) => r.label), [
    "expires in a minute",
    "expires in a day",
  ]);
  const attemptsLeft = await svc.sql<{ label: string }[]>`
    select error as label from webhook_attempts
    where endpoint_id = ${endpoint} order by at`;
  assertEquals(attemptsLeft.map((r) => r.label), [
    "29 days",
    "a day",
    "a minute",
  ]);
});

Deno.test("housekeeping records each disable whose end passed once, and leaves disables without an end or with one ahead", async () => {
  await using svc = await startService(
    { HOUSEKEEPING_INTERVAL_MS: "50" },
    { bcryptCost: 4 },
  );
  const disables = {
    "ended a year ago": -YEAR,
    "ended a minute ago": -MINUTE,
    "ends in a day": DAY,
    "without an end": null,
  };
  const ids: Record<string, number> = {};
  for (const [label, offset] of Object.entries(disables)) {
    const name = `off${Object.keys(ids).length}`;
    const [{ id }] = await svc.sql<{ id: number }[]>`
      insert into users (username, username_key, name, name_key, email,
        email_key, role, password_hash, disabled_at, disabled_reason,
        disabled_until)
      values (${name}, ${name}, ${label}, ${label}, ${name + "@example.com"},
        ${name + "@example.com"}, 'viewer', 'x', now() - interval '2 years',
        ${label}, ${
      offset === null ? null : svc.sql`now() + make_interval(secs => ${offset})`
    })
      returning id`;
    ids[label] = id;
  }
  await sweepsRun(svc, 3);
  for (const [label, id] of Object.entries(ids)) {
    const { data } = await svc.admin.GET("/api/users/{id}", {
      params: { path: { id } },
    });
    const ended = label.startsWith("ended");
    assertEquals(data?.disabled === null, ended, label);
    const enabled = await svc.admin.GET("/api/audit", {
      params: { query: { action: "user.enabled", targetId: id } },
    });
    assertEquals(
      enabled.data?.map((r) => r.details),
      ended ? [{ expired: true }] : [],
      label,
    );
  }
});

Deno.test("with no sweep before it, the login of a user whose disable ran out records user.enabled {expired: true}, once", async () => {
  // A sweep a day away: the login alone meets the ended disable.
  await using svc = await startService(
    { HOUSEKEEPING_INTERVAL_MS: String(DAY * 1000) },
    { bcryptCost: 4 },
  );
  const { account, password } = await svc.userClient("viewer");
  await svc.sql`
    update users set disabled_at = now() - interval '1 day',
      disabled_until = now() - interval '1 minute'
    where id = ${account.id}`;
  for (let i = 0; i < 2; i++) {
    assert((await svc.client().login(account.username, password)).ok);
  }
  const enabled = await svc.admin.GET("/api/audit", {
    params: { query: { action: "user.enabled", targetId: account.id } },
  });
  assertEquals(enabled.data?.map((r) => [r.actor, r.details]), [
    [null, { expired: true }],
  ]);
});
