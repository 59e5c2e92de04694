/**
 * API keys: created, listed and revoked by admins; used as
 * `Authorization: Bearer uak_...` in place of a session, acting as their
 * owner with the owner's current role.
 */
import { createHash } from "node:crypto";
import { createUserAdminClient } from "@user-admin/client";
import { verifyChain } from "../src/audit/verify.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { startCluster } from "./support/cluster.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import {
  holdLocks,
  loginCookie,
  newUser,
  sharedService,
  type TestService,
  userCount,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const KEY_SHAPE = /^uak_[A-Za-z0-9_-]{43}$/;

/** A raw request with these headers; answers status and parsed body. */
async function call(
  svc: TestService,
  path: string,
  headers: Record<string, string>,
  init: RequestInit = {},
) {
  const res = await svc.fetch(path, { ...init, headers });
  return { status: res.status, body: await res.json() };
}

const sha256 = (text: string) =>
  new Uint8Array(createHash("sha256").update(text).digest());

Deno.test("a new key answers 201 with the key once; the database keeps only its SHA-256; the list never shows it", async () => {
  const svc = await service();
  const adminId = svc.adminAccount.id;
  const first = await createKey(svc, adminId, "billing");
  const second = await createKey(svc, adminId, "reports");
  assertEquals(Object.keys(first).sort(), [
    "createdAt",
    "createdBy",
    "expiresAt",
    "id",
    "key",
    "lastUsedAt",
    "name",
    "prefix",
    "reachGroupId",
  ]);
  assertMatch(first.key, KEY_SHAPE);
  assertEquals(first.prefix, first.key.slice(0, 12));
  assertMatch(first.prefix, /^uak_.{8}$/);
  assertEquals(first.name, "billing");
  assertEquals(first.expiresAt, null);
  assertEquals(first.lastUsedAt, null);
  assertMatch(first.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert(first.key !== second.key);

  const rows = await svc.sql<{ secret_hash: Uint8Array; row: string }[]>`
    select secret_hash, row_to_json(k)::text as row from api_keys k
    where id = ${first.id}`;
  assertEquals([...rows[0].secret_hash], [...sha256(first.key)]);
  assert(!rows[0].row.includes(first.key.slice(4)), "the secret is stored");

  const list = await svc.admin.get("/api/users/{id}/keys", {
    params: { path: { id: adminId } },
  });
  assert(list.ok);
  // Newest first, without `key`.
  assertEquals(list.data.map((k) => k.name), ["reports", "billing"]);
  const { key: _, ...shown } = first;
  assertEquals(list.data[1], shown);
  assert(!JSON.stringify(list.data).includes(first.key));
});

Deno.test("a key alone, with no login, is its owner: me, the list and a create all answer, and the create's record names the key", async () => {
  const svc = await service();
  const { id: keyId, key } = await createKey(svc, svc.adminAccount.id);
  const api = keyClient(svc, key);
  assert(!api.hasSession);
  const me = await api.me();
  assert(me.ok);
  assertEquals(me.data, svc.adminAccount);
  const list = await api.get("/api/users");
  assertEquals(list.status, 200);
  const created = await api.post("/api/users", { body: newUser("bykey") });
  assertEquals(created.status, 201);
  assert(created.ok);

  const trail = await svc.admin.get("/api/audit", {
    params: { query: { action: "user.created", limit: 1 } },
  });
  assert(trail.ok);
  assertEquals(trail.data[0].actor, {
    id: svc.adminAccount.id,
    username: svc.adminAccount.username,
    keyId,
  });
  assertEquals(trail.data[0].target?.id, created.data.id);
  // The cookie's records name no key.
  const viaCookie = await svc.admin.post("/api/users", {
    body: newUser("bycookie"),
  });
  assert(viaCookie.ok);
  const latest = await svc.admin.get("/api/audit", {
    params: { query: { action: "user.created", limit: 1 } },
  });
  assert(latest.ok);
  assertEquals(latest.data[0].actor, {
    id: svc.adminAccount.id,
    username: svc.adminAccount.username,
  });
});

Deno.test("every malformed, unknown or other-scheme Authorization answers 401 Unauthorised, and a good cookie beside it changes nothing", async () => {
  const svc = await service();
  const { key } = await createKey(svc, svc.adminAccount.id);
  const cookie = await loginCookie(svc);
  const unknown = "uak_" + "A".repeat(43);
  const bad = [
    "Bearer",
    "Bearer ",
    "Basic x",
    `Basic ${btoa("admin:admin-pass-1234")}`,
    "Bearer uak_short",
    `Bearer ${key}x`,
    `Bearer ${key.slice(0, -1)}`,
    `Bearer uak_${"+".repeat(43)}`,
    `Bearer uak_${"A".repeat(42)}=`,
    `Bearer ${key.slice(4)}`,
    `Bearer xak_${key.slice(4)}`,
    `Bearer  ${key}`,
    `Token ${key}`,
    key,
    `Bearer ${unknown}`,
  ];
  for (const authorization of bad) {
    for (const path of ["/api/auth/me", "/api/users", "/api/audit"]) {
      const res = await call(svc, path, { authorization, cookie });
      assertEquals(
        res,
        { status: 401, body: { error: "Unauthorised" } },
        `${path} with ${JSON.stringify(authorization)}`,
      );
    }
    const post = await call(svc, "/api/users", { authorization, cookie }, {
      method: "POST",
      body: JSON.stringify(newUser("never")),
    });
    assertEquals(post, { status: 401, body: { error: "Unauthorised" } });
  }
  // The scheme is case-insensitive (RFC 9110); the cookie alone still works.
  assertEquals(
    (await call(svc, "/api/auth/me", { authorization: `bearer ${key}` }))
      .status,
    200,
  );
  assertEquals((await call(svc, "/api/auth/me", { cookie })).status, 200);
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users where username = 'never'`;
  assertEquals(n, 0);
});

Deno.test("a key acts with its owner's current role: a viewer's key gets 403, a demoted owner's 403, a deleted owner's 401 and its keys are gone", async () => {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  const viewerKey = await createKey(svc, viewer.account.id);
  const asViewer = keyClient(svc, viewerKey.key);
  assertEquals((await asViewer.me()).status, 200);
  assertEquals(await asViewer.get("/api/users"), {
    ok: false,
    status: 403,
    error: "Forbidden",
  });

  const other = await svc.userClient("admin");
  const { key } = await createKey(svc, other.account.id);
  const api = keyClient(svc, key);
  assertEquals((await api.get("/api/users")).status, 200);
  const demoted = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id: other.account.id } },
    body: { role: "viewer" },
  });
  assert(demoted.ok);
  assertEquals(await api.get("/api/users"), {
    ok: false,
    status: 403,
    error: "Forbidden",
  });
  assertEquals(
    await api.post("/api/users", { body: newUser("demoted") }),
    { ok: false, status: 403, error: "Forbidden" },
  );
  const me = await api.me();
  assert(me.ok);
  assertEquals(me.data.role, "viewer");

  const deleted = await svc.admin.delete("/api/users/{id}", {
    params: { path: { id: other.account.id } },
  });
  assert(deleted.ok);
  assertEquals(await api.me(), {
    ok: false,
    status: 401,
    error: "Unauthorised",
  });
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from api_keys where user_id = ${other.account.id}`;
  assertEquals(n, 0);
});

Deno.test("a disabled owner's key answers 401 until the owner is enabled again; the key is kept", async () => {
  const svc = await service();
  const owner = await svc.userClient("admin");
  const { key } = await createKey(svc, owner.account.id);
  const api = keyClient(svc, key);
  assertEquals((await api.get("/api/users")).status, 200);
  const disabled = await svc.admin.disableUser(owner.account.id, {
    reason: "contract ended",
  });
  assert(disabled.ok, JSON.stringify(disabled));
  const unauthorised = {
    ok: false,
    status: 401,
    error: "Unauthorised",
  } as const;
  assertEquals(await api.me(), unauthorised);
  assertEquals(await api.get("/api/users"), unauthorised);
  assertEquals(
    await api.post("/api/users", { body: newUser("while-disabled") }),
    unauthorised,
  );
  const enabled = await svc.admin.enableUser(owner.account.id);
  assert(enabled.ok, JSON.stringify(enabled));
  assertEquals((await api.get("/api/users")).status, 200);
  assertEquals((await api.me()).status, 200);
});

Deno.test("a revoked key answers 401 at its next request, on this app and on a second app on the same database; revoking again, or another user's key, is 404", async () => {
  const svc = await service();
  const second = svc.configured({});
  const { id, key } = await createKey(svc, svc.adminAccount.id);
  const viewer = await svc.userClient("viewer");
  const foreign = await createKey(svc, viewer.account.id);
  const viaSecond = () =>
    second.fetch("/api/auth/me", {
      headers: { authorization: `Bearer ${key}` },
    });
  assertEquals((await viaSecond()).status, 200);
  assertEquals((await keyClient(svc, key).me()).status, 200);

  // Another user's key under this user's id: not found, and still live.
  assertEquals(
    await svc.admin.delete("/api/users/{id}/keys/{keyId}", {
      params: { path: { id: svc.adminAccount.id, keyId: foreign.id } },
    }),
    { ok: false, status: 404, error: "API key not found" },
  );
  assertEquals((await keyClient(svc, foreign.key).me()).status, 200);

  const revoked = await svc.admin.delete("/api/users/{id}/keys/{keyId}", {
    params: { path: { id: svc.adminAccount.id, keyId: id } },
  });
  assertEquals(revoked, { ok: true, status: 200, data: { ok: true } });
  const res = await viaSecond();
  assertEquals(res.status, 401);
  assertEquals(await res.json(), { error: "Unauthorised" });
  assertEquals(await keyClient(svc, key).me(), {
    ok: false,
    status: 401,
    error: "Unauthorised",
  });
  assertEquals(
    await svc.admin.delete("/api/users/{id}/keys/{keyId}", {
      params: { path: { id: svc.adminAccount.id, keyId: id } },
    }),
    { ok: false, status: 404, error: "API key not found" },
  );
  for (const path of ["/api/users/1/keys/abc", "/api/users/1/keys/99999999"]) {
    const raw = await svc.adminFetch(path, { method: "DELETE" });
    assertEquals(raw.status, 404);
    assertEquals(await raw.json(), { error: "API key not found" });
  }
  // A revoked key leaves the list.
  const list = await svc.admin.get("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
  });
  assert(list.ok);
  assertEquals(list.data, []);

  const records = await svc.admin.get("/api/audit", {
    params: { query: { limit: 10 } },
  });
  assert(records.ok);
  const revokedRecord = records.data.find((r) => r.action === "key.revoked");
  assert(revokedRecord);
  assertEquals(revokedRecord.details, { keyId: id, name: "service" });
  assertEquals(revokedRecord.target?.id, svc.adminAccount.id);
  const createdRecord = records.data.find((r) =>
    r.action === "key.created" && r.details.keyId === id
  );
  assertEquals(createdRecord?.details, { keyId: id, name: "service" });
});

Deno.test("an expired key answers 401", async () => {
  const svc = await service();
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const created = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
    body: { name: "short-lived", expiresAt },
  });
  assert(created.ok);
  assertEquals(created.data.expiresAt, expiresAt);
  const api = keyClient(svc, created.data.key);
  assertEquals((await api.me()).status, 200);
  await svc.sql`
    update api_keys set expires_at = now() - interval '1 second'
    where id = ${created.data.id}`;
  assertEquals(await api.me(), {
    ok: false,
    status: 401,
    error: "Unauthorised",
  });
});

Deno.test("creating a key checks 401, 403, then 404, then the body, then the count of live keys", async () => {
  const svc = await service();
  const id = svc.adminAccount.id;
  const post = (path: string, body: unknown, headers = {}) =>
    svc.adminFetch(path, {
      method: "POST",
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers,
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
  const invalid = { status: 400, body: { error: "Invalid API key request" } };
  const DAY = 86_400_000;
  const inTwoYears = new Date();
  inTwoYears.setUTCFullYear(inTwoYears.getUTCFullYear() + 2);
  const bad = [
    {},
    { name: "" },
    { name: "x".repeat(101) },
    { name: "🔑".repeat(101) },
    { name: null },
    { name: 5 },
    { name: "ok", expiresAt: new Date(Date.now() - 60_000).toISOString() },
    {
      name: "ok",
      expiresAt: new Date(inTwoYears.getTime() + DAY).toISOString(),
    },
    { name: "ok", expiresAt: "tomorrow" },
    { name: "ok", expiresAt: "2099-13-01T00:00:00Z" },
    { name: "ok", expiresAt: 1_900_000_000 },
    [],
    "not json",
    "null",
  ];
  for (const body of bad) {
    assertEquals(
      await post(`/api/users/${id}/keys`, body),
      invalid,
      JSON.stringify(body),
    );
  }
  // 404 comes before the body's checks; ids that cannot exist are unknown.
  for (const path of ["/api/users/99999/keys", "/api/users/abc/keys"]) {
    assertEquals(await post(path, {}), {
      status: 404,
      body: { error: "User not found" },
    });
  }
  // 403 before 404, 401 before all.
  const viewer = await svc.userClient("viewer");
  const viewerCookie = await loginCookie(svc, {
    username: viewer.account.username,
    password: viewer.password,
  });
  assertEquals(
    await svc.fetch("/api/users/99999/keys", {
      method: "POST",
      body: "{}",
      headers: { cookie: viewerCookie },
    }).then(async (r) => ({ status: r.status, body: await r.json() })),
    { status: 403, body: { error: "Forbidden" } },
  );
  assertEquals(
    await svc.fetch("/api/users/99999/keys", { method: "POST", body: "{}" })
      .then(async (r) => ({ status: r.status, body: await r.json() })),
    { status: 401, body: { error: "Unauthorised" } },
  );

  // The limits' edges are accepted; unknown fields are ignored.
  for (
    const body of [
      { name: "x".repeat(100) },
      { name: "🔑".repeat(100) },
      { name: "ok", expiresAt: null },
      { name: "ok", extra: true },
      {
        name: "ok",
        expiresAt: new Date(inTwoYears.getTime() - DAY).toISOString(),
      },
    ]
  ) {
    const res = await post(`/api/users/${id}/keys`, body);
    assertEquals(res.status, 201, JSON.stringify(body));
  }
});

Deno.test("a user holds at most 100 live keys: the next answers 400 Too many API keys; expired and revoked keys do not count", async () => {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  const uid = viewer.account.id;
  await svc.sql`
    insert into api_keys (user_id, name, prefix, secret_hash)
    select ${uid}, 'bulk', 'uak_bulk', sha256(convert_to('k' || n, 'UTF8'))
    from generate_series(1, 99) n`;
  const last = await createKey(svc, uid, "hundredth");
  const over = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: uid } },
    body: { name: "one too many" },
  });
  assertEquals(over, { ok: false, status: 400, error: "Too many API keys" });
  // A bad body is still answered first.
  assertEquals(
    await svc.admin.post("/api/users/{id}/keys", {
      params: { path: { id: uid } },
      body: { name: "" },
    }),
    { ok: false, status: 400, error: "Invalid API key request" },
  );
  await svc.admin.delete("/api/users/{id}/keys/{keyId}", {
    params: { path: { id: uid, keyId: last.id } },
  });
  await createKey(svc, uid, "after a revocation");
  await svc.sql`
    update api_keys set expires_at = now() - interval '1 second'
    where id = (select min(id) from api_keys where user_id = ${uid})`;
  await createKey(svc, uid, "after an expiry");
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from api_keys
    where user_id = ${uid} and revoked_at is null
      and (expires_at is null or expires_at > now())`;
  assertEquals(n, 100);
});

Deno.test("listing keys: 404 for an unknown user, 401 and 403 first", async () => {
  const svc = await service();
  assertEquals(
    await svc.admin.get("/api/users/{id}/keys", {
      params: { path: { id: 99999 } },
    }),
    { ok: false, status: 404, error: "User not found" },
  );
  const viewer = await svc.userClient("viewer");
  assertEquals(
    await viewer.client.get("/api/users/{id}/keys", {
      params: { path: { id: viewer.account.id } },
    }),
    { ok: false, status: 403, error: "Forbidden" },
  );
  assertEquals(
    await svc.client().get("/api/users/{id}/keys", {
      params: { path: { id: 99999 } },
    }),
    { ok: false, status: 401, error: "Unauthorised" },
  );
});

Deno.test("lastUsedAt is written by the first use and not again within the minute", async () => {
  const svc = await service();
  const { id, key } = await createKey(svc, svc.adminAccount.id);
  const lastUsed = async () => {
    const [row] = await svc.sql<{ at: string | null }[]>`
      select last_used_at::text as at from api_keys where id = ${id}`;
    return row.at;
  };
  assertEquals(await lastUsed(), null);
  const api = keyClient(svc, key);
  assertEquals((await api.me()).status, 200);
  const first = await lastUsed();
  assert(first !== null);
  for (let i = 0; i < 5; i++) assertEquals((await api.me()).status, 200);
  assertEquals(await lastUsed(), first);
  const list = await svc.admin.get("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
  });
  assert(list.ok);
  assert(list.data[0].lastUsedAt !== null);
  // Older than a minute: the next use writes it again.
  await svc.sql`
    update api_keys set last_used_at = now() - interval '61 seconds'
    where id = ${id}`;
  const aged = await lastUsed();
  assertEquals((await api.me()).status, 200);
  const again = await lastUsed();
  assert(again !== null && again !== aged, `${again} after ${aged}`);
});

Deno.test("a password reset leaves the user's keys working; a reset made with a key ends all the user's sessions", async () => {
  const svc = await service();
  const other = await svc.userClient("admin");
  const { key } = await createKey(svc, other.account.id);
  const reset = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id: other.account.id } },
    body: { password: "a brand new password" },
  });
  assert(reset.ok);
  assertEquals((await keyClient(svc, key).me()).status, 200);

  // The key's owner resets their own password with the key: no session
  // of theirs is the caller's, so every one of them ends.
  const cookie = await loginCookie(svc, {
    username: other.account.username,
    password: "a brand new password",
  });
  const own = await keyClient(svc, key).patch("/api/users/{id}", {
    params: { path: { id: other.account.id } },
    body: { password: "yet another password" },
  });
  assert(own.ok);
  assertEquals((await call(svc, "/api/auth/me", { cookie })).status, 401);
  assertEquals((await keyClient(svc, key).me()).status, 200);
});

Deno.test("key requests skip the Origin check; logout with a key ends nothing", async () => {
  const svc = await service();
  const { key } = await createKey(svc, svc.adminAccount.id);
  const authorization = `Bearer ${key}`;
  const origin = "https://evil.example";
  const created = await call(svc, "/api/users", { authorization, origin }, {
    method: "POST",
    body: JSON.stringify(newUser("crossorigin")),
  });
  assertEquals(created.status, 201);
  // A cookie from a foreign Origin is still refused.
  const cookie = await loginCookie(svc);
  assertEquals(
    await call(svc, "/api/users", { cookie, origin }, {
      method: "POST",
      body: JSON.stringify(newUser("refused")),
    }),
    { status: 403, body: { error: "Forbidden" } },
  );
  const out = await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { authorization, cookie },
  });
  assertEquals(out.status, 200);
  assertEquals(await out.json(), { ok: true });
  assertEquals(out.headers.getSetCookie(), []);
  assertEquals(
    (await call(svc, "/api/auth/me", { authorization })).status,
    200,
  );
  assertEquals((await call(svc, "/api/auth/me", { cookie })).status, 200);
});

Deno.test("records of key requests name the key, and the chain still verifies; altering a record's key id breaks it", async () => {
  const svc = await service();
  const { id: keyId, key } = await createKey(svc, svc.adminAccount.id);
  const api = keyClient(svc, key);
  const created = await api.post("/api/users", { body: newUser("chained") });
  assert(created.ok);
  const second = await api.post("/api/users/{id}/keys", {
    params: { path: { id: created.data.id } },
    body: { name: "by key" },
  });
  assert(second.ok);
  const records = await svc.admin.get("/api/audit", {
    params: { query: { limit: 3 } },
  });
  assert(records.ok);
  const byKey = records.data.filter((r) => r.actor?.keyId === keyId);
  assertEquals(byKey.map((r) => r.action), ["key.created", "user.created"]);
  assertEquals(byKey[0].details, { keyId: second.data.id, name: "by key" });

  const verified = await svc.store.audit.walk(verifyChain);
  assert(verified.ok, JSON.stringify(verified));
  const [{ id: recordId }] = await svc.sql<{ id: string }[]>`
    select id::text from audit_events where actor_key_id = ${keyId}
    order by id limit 1`;
  await svc.sql`
    update audit_events set actor_key_id = ${keyId + 1000}
    where id = ${recordId}`;
  const broken = await svc.store.audit.walk(verifyChain);
  assert(!broken.ok);
  assertEquals(broken.id, Number(recordId));
  assertEquals(broken.problem, "altered");
  await svc.sql`
    update audit_events set actor_key_id = ${keyId} where id = ${recordId}`;
});

Deno.test({
  ...postgresOnly(
    "a key revoked through one service process answers 401 at its next request to another process on the same database",
  ),
  async fn() {
    await using cluster = await startCluster(2);
    const [a, b] = cluster.urls;
    const cookie = await cluster.login();
    const admin = createUserAdminClient({ baseUrl: a, headers: { cookie } });
    const me = await admin.me();
    assert(me.ok);
    const created = await admin.post("/api/users/{id}/keys", {
      params: { path: { id: me.data.id } },
      body: { name: "cross-instance" },
    });
    assert(created.ok);
    const onB = createUserAdminClient({ baseUrl: b, apiKey: created.data.key });
    assertEquals((await onB.get("/api/users")).status, 200);
    const revoked = await admin.delete("/api/users/{id}/keys/{keyId}", {
      params: { path: { id: me.data.id, keyId: created.data.id } },
    });
    assert(revoked.ok);
    assertEquals(await onB.get("/api/users"), {
      ok: false,
      status: 401,
      error: "Unauthorised",
    });
  },
});

// A held lock needs a second connection: the embedded database has one.
Deno.test({
  ...postgresOnly(
    "a write made with a key revoked while it waited answers 401 and writes nothing; one whose owner was demoted meanwhile, 403",
  ),
  async fn() {
    const svc = await service();
    const other = await svc.userClient("admin");
    for (
      const [change, status, error] of [
        [`update api_keys set revoked_at = now()`, 401, "Unauthorised"],
        [`update users set role = 'viewer'`, 403, "Forbidden"],
      ] as const
    ) {
      await svc
        .sql`update users set role = 'admin' where id = ${other.account.id}`;
      const { id: keyId, key } = await createKey(svc, other.account.id);
      const before = await userCount(svc);
      // A use within the minute: the guard then writes nothing.
      assertEquals((await keyClient(svc, key).me()).status, 200);
      // The change, uncommitted, holding the owner's row: the guard reads
      // the key and role as they were, the write's re-check waits for it.
      const held = await holdLocks(svc.sql, async (tx) => {
        await tx`
          select 1 from users where id = ${other.account.id} for no key update`;
        await tx.unsafe(
          `${change} where id = ${
            change.includes("api_keys") ? keyId : other.account.id
          }`,
        );
      });
      const pending = keyClient(svc, key).post("/api/users", {
        body: newUser(`raced${status}`),
      });
      // Until the request waits for the owner's row.
      for (let i = 0;; i++) {
        const [{ n }] = await svc.sql<{ n: number }[]>`
          select count(*)::int as n from pg_locks where not granted`;
        if (n > 0) break;
        assert(i < 500, "the request never waited");
        await new Promise((r) => setTimeout(r, 10));
      }
      await held.release();
      assertEquals(
        await pending as unknown,
        { ok: false, status, error },
      );
      assertEquals(await userCount(svc), before);
    }
  },
});
