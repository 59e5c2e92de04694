/**
 * Idempotency-Key on POST /api/users: a retry of the same request creates
 * nothing more and answers what the first answered.
 */
import { createHash } from "node:crypto";
import { createUserAdminClient, createUserWithRetry } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { startCluster } from "./support/cluster.ts";
import {
  holdLocks,
  loginCookie,
  newUser,
  sharedService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

interface Answer {
  status: number;
  body: unknown;
  location: string | null;
  replayed: string | null;
}

/** POST /api/users as the admin with these headers (and the key, if given). */
async function create(
  svc: Pick<TestService, "adminFetch">,
  body: unknown,
  key?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await svc.adminFetch("/api/users", {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: key === undefined ? headers : {
      ...headers,
      "idempotency-key": key,
    },
  });
  return {
    status: res.status,
    body: await res.json(),
    location: res.headers.get("location"),
    replayed: res.headers.get("idempotent-replayed"),
  };
}

async function usersNamed(svc: Pick<TestService, "sql">, username: string) {
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users where username = ${username}`;
  return n;
}

async function createdRecords(svc: Pick<TestService, "sql">, username: string) {
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from (
      select target_username from audit_events where action = 'user.created'
      union all
      -- A tail is a record's canonical array after its id and time.
      select ('[0,0,' || tail)::jsonb->>6 from audit_pending
      where ('[0,0,' || tail)::jsonb->>2 = 'user.created'
    ) r where target_username = ${username}`;
  return n;
}

Deno.test("the same key and body answer the kept 201 unchanged with Idempotent-Replayed: true; nothing more is created or recorded", async () => {
  const svc = await service();
  const first = await create(svc, newUser("ida"), "key-1");
  assertEquals(first.status, 201);
  assertEquals(first.replayed, null);
  const id = (first.body as { id: number }).id;
  assertEquals(first.location, `/api/users/${id}`);
  // Key order and spacing do not make another request.
  const reordered = `{ "role": "viewer", "password": "ida-password",
    "email": "ida@example.com", "name": "ida", "username": "ida" }`;
  for (const body of [newUser("ida"), reordered]) {
    const again = await create(svc, body, "key-1");
    assertEquals(again, { ...first, replayed: "true" });
  }
  // The password is no part of the fingerprint: the database never holds a
  // fast hash of it. Its row holds no trace of it either.
  const other = await create(
    svc,
    { ...newUser("ida"), password: "other-pw-1" },
    "key-1",
  );
  assertEquals(other, { ...first, replayed: "true" });
  const [row] = await svc.sql<{ row: string }[]>`
    select row_to_json(i)::text as row from idempotency_keys i where key = 'key-1'`;
  assert(!row.row.includes("ida-password"));
  assertEquals(await usersNamed(svc, "ida"), 1);
  await svc.store.audit.seal();
  assertEquals(await createdRecords(svc, "ida"), 1);
  // Without the key, the same body is a new request: 409.
  assertEquals((await create(svc, newUser("ida"))).status, 409);
});

Deno.test("the same key with another body answers 422; the first answer stays kept", async () => {
  const svc = await service();
  const first = await create(svc, newUser("idb"), "key-2");
  assertEquals(first.status, 201);
  const other = await create(svc, newUser("idc"), "key-2");
  assertEquals(other, {
    status: 422,
    body: { error: "Idempotency-Key reused with a different request" },
    location: null,
    replayed: null,
  });
  assertEquals(await usersNamed(svc, "idc"), 0);
  assertEquals((await create(svc, newUser("idb"), "key-2")).replayed, "true");
});

Deno.test("a 409 is kept and replayed; a 400 is not kept, so a retry with a good body runs", async () => {
  const svc = await service();
  assertEquals((await create(svc, newUser("taken"))).status, 201);
  const conflict = await create(svc, newUser("taken"), "key-3");
  assertEquals(conflict.status, 409);
  assertEquals(conflict.body, { error: "Username or email already exists" });
  assertEquals(await create(svc, newUser("taken"), "key-3"), {
    ...conflict,
    replayed: "true",
  });

  const bad = await create(svc, { ...newUser("idd"), role: "root" }, "key-4");
  assertEquals(bad.status, 400);
  assertEquals(bad.body, { error: "Role must be admin or viewer" });
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from idempotency_keys where key = 'key-4'`;
  assertEquals(n, 0);
  const good = await create(svc, newUser("idd"), "key-4");
  assertEquals(good.status, 201);
  assertEquals(good.replayed, null);
});

Deno.test("a malformed Idempotency-Key answers 400 after 401/403 and before the body's checks", async () => {
  const svc = await service();
  const invalid = {
    status: 400,
    body: { error: "Invalid Idempotency-Key" },
    location: null,
    replayed: null,
  };
  for (const key of ["", "x".repeat(256), "clé", "a\tb", "\u00ff"]) {
    assertEquals(await create(svc, newUser("ide"), key), invalid, key);
    // Before the body: a bad body with a bad key is the key's 400.
    assertEquals(await create(svc, "not json", key), invalid, key);
    assertEquals(await create(svc, {}, key), invalid, key);
  }
  assertEquals(await usersNamed(svc, "ide"), 0);
  // The limits' edges are keys.
  assertEquals(
    (await create(svc, newUser("ide"), "x".repeat(255))).status,
    201,
  );
  assertEquals((await create(svc, newUser("idf"), " ~!")).status, 201);
  assertEquals((await create(svc, newUser("idg"), "k")).status, 201);

  // 401 and 403 come first.
  const anonymous = await svc.fetch("/api/users", {
    method: "POST",
    body: "{}",
    headers: { "idempotency-key": "" },
  });
  assertEquals(anonymous.status, 401);
  assertEquals(await anonymous.json(), { error: "Unauthorised" });
  const viewer = await svc.userClient("viewer");
  const cookie = await loginCookie(svc, {
    username: viewer.account.username,
    password: viewer.password,
  });
  const forbidden = await svc.fetch("/api/users", {
    method: "POST",
    body: "{}",
    headers: { cookie, "idempotency-key": "" },
  });
  assertEquals(forbidden.status, 403);
  assertEquals(await forbidden.json(), { error: "Forbidden" });
});

Deno.test("keys are per caller: another admin's request with the same key runs on its own", async () => {
  const svc = await service();
  const other = await svc.userClient("admin");
  const otherCookie = await loginCookie(svc, {
    username: other.account.username,
    password: other.password,
  });
  const asOther = {
    adminFetch: (path: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("cookie", otherCookie);
      return svc.fetch(path, { ...init, headers });
    },
  };
  assertEquals((await create(svc, newUser("idh"), "shared")).status, 201);
  const theirs = await create(asOther, newUser("idh"), "shared");
  assertEquals(theirs.status, 409);
  assertEquals(theirs.replayed, null);
  assertEquals(await create(asOther, newUser("idh"), "shared"), {
    ...theirs,
    replayed: "true",
  });
  assertEquals((await create(svc, newUser("idh"), "shared")).replayed, "true");
});

/** The fingerprint the service keeps: SHA-256 of the body's JSON with its keys sorted, without the password. */
const fingerprint = ({ password: _, ...body }: Record<string, unknown>) =>
  createHash("sha256").update(
    JSON.stringify(Object.fromEntries(Object.entries(body).sort())),
  ).digest();

Deno.test("a run in progress (its row, as another instance left it) answers 409 for the same body and 422 for another; once its time is up the key runs again", async () => {
  const svc = await service();
  const body = newUser("idj");
  await svc.sql`
    insert into idempotency_keys (user_id, key, fingerprint, run_id, expires_at)
    values (${svc.adminAccount.id}, 'key-5', ${fingerprint(body)}, 'elsewhere',
      now() + interval '1 minute')`;
  assertEquals(await create(svc, body, "key-5"), {
    status: 409,
    body: { error: "Request with this Idempotency-Key is in progress" },
    location: null,
    replayed: null,
  });
  assertEquals(
    (await create(svc, newUser("other"), "key-5")).body,
    { error: "Idempotency-Key reused with a different request" },
  );
  assertEquals(await usersNamed(svc, "idj"), 0);
  // The run never ended (its instance crashed), and its time is up.
  await svc.sql`
    update idempotency_keys set expires_at = now() - interval '1 second'
    where key = 'key-5'`;
  const taken = await create(svc, newUser("idk"), "key-5");
  assertEquals(taken.status, 201);
  assertEquals(taken.replayed, null);
  assertEquals((await create(svc, newUser("idk"), "key-5")).replayed, "true");
  // The housekeeping sweep removes rows whose time is up, and only those.
  await svc.sql`
    insert into idempotency_keys (user_id, key, fingerprint, run_id, expires_at)
    values (${svc.adminAccount.id}, 'key-6', ${new Uint8Array(32)}, 'old',
      now() - interval '1 second')`;
  assertEquals(await svc.store.idempotency.sweep(), 1);
  const left = await svc.sql<{ key: string }[]>`
    select key from idempotency_keys order by key`;
  assertEquals(left.map((r) => r.key), ["key-5"]);
});

/** Holds the admin's row against a create's re-check of its caller (`for share`), not against a foreign key (`for key share`). */
const holdAdminRow = (svc: TestService) =>
  holdLocks(
    svc.sql,
    (tx) =>
      tx`select 1 from users where id = ${svc.adminAccount.id} for no key update`,
  );

// A held lock needs a second connection: the embedded database has one.
Deno.test({
  ...postgresOnly(
    "while the first request runs (held at a lock), the same key answers 409 in progress, then the kept answer",
  ),
  async fn() {
    const svc = await service();
    const held = await holdAdminRow(svc);
    const first = create(svc, newUser("idq"), "key-10");
    // The first request's row is committed as it starts.
    for (let i = 0;; i++) {
      const [row] = await svc.sql`
        select 1 from idempotency_keys where key = 'key-10'`;
      if (row) break;
      assert(i < 500, "the first request never started");
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(await create(svc, newUser("idq"), "key-10"), {
      status: 409,
      body: { error: "Request with this Idempotency-Key is in progress" },
      location: null,
      replayed: null,
    });
    await held.release();
    const answered = await first;
    assertEquals(answered.status, 201);
    assertEquals(await create(svc, newUser("idq"), "key-10"), {
      ...answered,
      replayed: "true",
    });
  },
});

Deno.test({
  ...postgresOnly(
    "a request answered 500 at its deadline is not kept: the retry runs and creates the user once",
  ),
  async fn() {
    const svc = await service();
    const short = svc.configured({ REQUEST_TIMEOUT_MS: "800" });
    const cookie = await loginCookie(svc);
    const held = await holdAdminRow(svc);
    const send = () =>
      short.fetch("/api/users", {
        method: "POST",
        body: JSON.stringify(newUser("idl")),
        headers: { cookie, "idempotency-key": "key-7" },
      });
    const failed = await send();
    assertEquals(failed.status, 500);
    assertEquals(await failed.json(), { error: "Failed to create user" });
    await held.release();
    // The abandoned run gives its row up when its write is refused.
    let retry: Response;
    for (let i = 0;; i++) {
      retry = await send();
      if (retry.status !== 409) break;
      await retry.body?.cancel();
      assert(i < 200, "the failed run's row was never released");
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(retry.status, 201);
    assertEquals(retry.headers.get("idempotent-replayed"), null);
    await retry.body?.cancel();
    assertEquals(await usersNamed(svc, "idl"), 1);
  },
});

Deno.test("10 parallel creates with one key on two apps of one database: one user, one 201 run, the rest replays or in progress, one record", async () => {
  const svc = await service();
  const second = svc.configured({});
  const cookie = await loginCookie(svc);
  const answers = await Promise.all(
    Array.from(
      { length: 10 },
      (_, i) =>
        (i % 2 ? second.fetch : svc.fetch)("/api/users", {
          method: "POST",
          body: JSON.stringify(newUser("idm")),
          headers: { cookie, "idempotency-key": "key-8" },
        }).then(async (r) => ({
          status: r.status,
          replayed: r.headers.get("idempotent-replayed"),
          body: await r.json(),
        })),
    ),
  );
  assertOneRun(answers);
  assertEquals(await usersNamed(svc, "idm"), 1);
  await svc.store.audit.seal();
  assertEquals(await createdRecords(svc, "idm"), 1);
});

function assertOneRun(
  answers: { status: number; replayed: string | null; body: unknown }[],
) {
  const ran = answers.filter((a) => a.status === 201 && a.replayed === null);
  assertEquals(ran.length, 1, JSON.stringify(answers));
  for (const a of answers) {
    if (a.status === 201) assertEquals(a.body, ran[0].body);
    else {
      assertEquals(a, {
        status: 409,
        replayed: null,
        body: { error: "Request with this Idempotency-Key is in progress" },
      });
    }
  }
}

Deno.test("createUserWithRetry sends one key on every attempt: a lost answer is retried and replayed, not created twice", async () => {
  const svc = await service();
  const keys: string[] = [];
  let lost = 0;
  const api = createUserAdminClient({
    baseUrl: svc.baseUrl,
    fetch: async (request) => {
      keys.push(request.headers.get("idempotency-key") ?? "");
      const url = new URL(request.url);
      const res = await svc.adminFetch(url.pathname, {
        method: request.method,
        headers: request.headers,
        body: await request.text(),
      });
      // The first answer is lost on the way back.
      if (lost++ === 0) throw new TypeError("connection reset");
      return res;
    },
  });
  const created = await createUserWithRetry(api, newUser("idn"), {
    attempts: 3,
    delayMs: 1,
  });
  assert(created.ok);
  assertEquals(created.status, 201);
  assertEquals(keys.length, 2);
  assertEquals(keys[0], keys[1]);
  assert(/^[0-9a-f-]{36}$/.test(keys[0]), keys[0]);
  assertEquals(await usersNamed(svc, "idn"), 1);
  // A failure that is an answer (400) is returned, not retried.
  const before = keys.length;
  const bad = await createUserWithRetry(api, { ...newUser("ido"), name: "" });
  assertEquals(bad, {
    ok: false,
    status: 400,
    error: "All fields are required",
  });
  assertEquals(keys.length, before + 1);
});

Deno.test({
  ...postgresOnly(
    "10 parallel creates with one key on two service processes: exactly one user, one run, one record",
  ),
  async fn() {
    await using cluster = await startCluster(2);
    const [a, b] = cluster.urls;
    const cookie = await cluster.login();
    const answers = await Promise.all(
      Array.from(
        { length: 10 },
        (_, i) =>
          fetch(`${i % 2 ? b : a}/api/users`, {
            method: "POST",
            body: JSON.stringify(newUser("idp")),
            headers: { cookie, "idempotency-key": "key-9" },
          }).then(async (r) => ({
            status: r.status,
            replayed: r.headers.get("idempotent-replayed"),
            body: await r.json(),
          })),
      ),
    );
    assertOneRun(answers);
    const svc = { sql: cluster.sql } as unknown as TestService;
    assertEquals(await usersNamed(svc, "idp"), 1);
    for (let i = 0; await createdRecords(svc, "idp") === 0; i++) {
      assert(i < 200, "no record");
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(await createdRecords(svc, "idp"), 1);
  },
});
