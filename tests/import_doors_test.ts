/**
 * An import is a door to accounts like any other: it steps up before it can
 * make or change an admin, its uploader is who they are for the whole
 * upload, and an account it changes is changed, revoked and recorded as the
 * API would.
 */
import type { UserAdminClient } from "@user-admin/client";
import { createKey, keyClient } from "./support/api-keys.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { finished, ndjson, person, runImport } from "./support/imports.ts";
import { postgresOnly } from "./support/conditions.ts";
import {
  holdLocks,
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";
import { ageSecondFactor, freshCode, userWithTotp } from "./mfa_support.ts";

const service = sharedService({}, { bcryptCost: 4 });
const RECENT = "Recent second factor required";
const NOT_ALLOWED = "Importer no longer allowed";

/** An NDJSON import posted with the client's own credentials. */
const postWith = (
  client: UserAdminClient,
  records: unknown[],
  onConflict?: "update",
) =>
  client.POST("/api/imports", {
    params: { query: onConflict ? { onConflict } : {} },
    body: {} as never,
    bodySerializer: () => ndjson(records),
    headers: { "content-type": "application/x-ndjson" },
  });

async function roleOf(svc: TestService, username: string) {
  const [row] = await svc.sql<{ role: string }[]>`
    select role from users where username = ${username}`;
  return row?.role;
}

Deno.test("a session past its step-up window makes no admin through an import, neither by a new record nor by promoting a viewer; after a step-up, or with an API key, it can", async () => {
  const svc = await service();
  const admin = await userWithTotp(svc, "admin");
  const viewer = await svc.userClient("viewer");
  await ageSecondFactor(svc, admin.account.id);
  const promote = {
    username: viewer.account.username,
    name: viewer.account.name,
    email: viewer.account.email,
    role: "admin",
  };

  const jobs = async () => {
    const [{ n }] = await svc.sql<{ n: number }[]>`
      select count(*)::int as n from import_jobs`;
    return n;
  };
  const before = await jobs();
  const created = await postWith(admin.client, [
    person("imported-admin", { role: "admin" }),
  ]);
  assertEquals(
    [created.response.status, created.error],
    [403, { error: RECENT }],
  );
  const promoted = await postWith(admin.client, [promote], "update");
  assertEquals(
    [promoted.response.status, promoted.error],
    [403, { error: RECENT }],
  );
  assertEquals(await roleOf(svc, "imported-admin"), undefined);
  assertEquals(await roleOf(svc, viewer.account.username), "viewer");
  assertEquals(await jobs(), before, "nothing was stored");

  const stepped = await admin.client.stepUp({
    code: await freshCode(svc, admin.account.id, admin.secret),
  });
  assert(stepped.ok);
  const after = await postWith(admin.client, [
    person("imported-admin", { role: "admin" }),
  ]);
  assertEquals(after.response.status, 202);
  assertEquals((await finished(svc, after.data!.id)).created, 1);
  assertEquals(await roleOf(svc, "imported-admin"), "admin");

  // A key is its own possession factor: exempt, as everywhere.
  await ageSecondFactor(svc, admin.account.id);
  const key = await createKey(svc, admin.account.id, "importer");
  const withKey = await postWith(keyClient(svc, key.key), [promote], "update");
  assertEquals(withKey.response.status, 202);
  assertEquals((await finished(svc, withKey.data!.id)).updated, 1);
  assertEquals(await roleOf(svc, viewer.account.username), "admin");
});

/**
 * An NDJSON upload over the port whose lines are sent when the test says:
 * `send` a piece, `end` the body, `answer` the response.
 */
function upload(
  svc: TestService,
  credentials: Record<string, string>,
) {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
  });
  const answer = fetch(`${svc.baseUrl}/api/imports`, {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", ...credentials },
    body,
  }).then(async (res) => ({ status: res.status, body: await res.json() }));
  return {
    send: (records: unknown[]) =>
      controller.enqueue(encoder.encode(ndjson(records))),
    end: () => controller.close(),
    answer,
  };
}

/** The id of the import whose body is streaming in, once the service has begun it. */
async function receiving(svc: TestService) {
  for (let i = 0; i < 400; i++) {
    const [job] = await svc.sql<{ id: number }[]>`
      select id from import_jobs where status = 'receiving'`;
    if (job) return job.id;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the upload never began");
}

/** The import as an admin sees it, once it no longer runs. */
async function ended(svc: TestService, id: number) {
  const done = await finished(svc, id);
  return { status: done.status, error: (done as { error?: unknown }).error };
}

Deno.test("an upload whose key is revoked before its last line ends failed, and the admin of that line does not exist", async () => {
  const svc = await service();
  const owner = await svc.userClient("admin");
  const key = await createKey(svc, owner.account.id, "importer");
  const up = upload(svc, { authorization: `Bearer ${key.key}` });
  up.send([person("early-viewer")]);
  const id = await receiving(svc);
  const revoked = await svc.admin.DELETE("/api/users/{id}/keys/{keyId}", {
    params: { path: { id: owner.account.id, keyId: key.id } },
  });
  assertEquals(revoked.response.status, 200);
  up.send([person("late-admin", { role: "admin" })]);
  up.end();
  const res = await up.answer;
  assertEquals([res.status, res.body], [401, { error: "Unauthorised" }]);
  assertEquals(await ended(svc, id), { status: "failed", error: NOT_ALLOWED });
  assertEquals(await roleOf(svc, "late-admin"), undefined);
  assertEquals(await roleOf(svc, "early-viewer"), undefined);
});

Deno.test("an upload whose owner is demoted before its last line ends failed, and the admin of that line does not exist", async () => {
  const svc = await service();
  const owner = await svc.userClient("admin");
  const cookie = await loginCookie(svc, {
    username: owner.account.username,
    password: owner.password,
  });
  const up = upload(svc, { cookie });
  up.send([person("early-viewer")]);
  const id = await receiving(svc);
  const demoted = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: owner.account.id } },
    body: { role: "viewer" },
  });
  assertEquals(demoted.response.status, 200);
  up.send([person("late-admin", { role: "admin" })]);
  up.end();
  const res = await up.answer;
  assertEquals([res.status, res.body], [403, { error: "Forbidden" }]);
  assertEquals(await ended(svc, id), { status: "failed", error: NOT_ALLOWED });
  assertEquals(await roleOf(svc, "late-admin"), undefined);
});

// Holding the job from the workers needs a second connection: the
// embedded database has one.
Deno.test({
  ...postgresOnly(
    "a queued job whose uploader is deleted before its batch ends failed and writes nothing",
  ),
  async fn() {
    const svc = await service();
    const owner = await svc.userClient("admin");
    const key = await createKey(svc, owner.account.id, "importer");
    const up = upload(svc, { authorization: `Bearer ${key.key}` });
    up.send([person("after-delete", { role: "admin" })]);
    const id = await receiving(svc);
    // Kept from the workers (a lease takes its job FOR UPDATE SKIP LOCKED),
    // not from being queued (an update of no key).
    const held = await holdLocks(
      svc.sql,
      (tx) => tx`select 1 from import_jobs where id = ${id} for key share`,
    );
    up.end();
    assertEquals((await up.answer).status, 202);
    const deleted = await svc.admin.DELETE("/api/users/{id}", {
      params: { path: { id: owner.account.id } },
    });
    assertEquals(deleted.response.status, 200);
    await held.release();
    assertEquals(await ended(svc, id), {
      status: "failed",
      error: NOT_ALLOWED,
    });
    assertEquals(await roleOf(svc, "after-delete"), undefined);
  },
});

/** The records written since `after` (an audit id), imports' own aside, with key ids made alike. */
async function recordsSince(svc: TestService, after: number) {
  await svc.store.audit.seal();
  const rows = await svc.sql<
    { action: string; details: Record<string, unknown> }[]
  >`
    select action, details from audit_events
    where id > ${after} and action not like 'import.%' order by id`;
  return rows.map(({ action, details }) => ({
    action,
    details: "keyId" in details ? { ...details, keyId: "key" } : details,
  }));
}

async function lastRecord(svc: TestService) {
  await svc.store.audit.seal();
  const [{ id }] = await svc.sql<{ id: number }[]>`
    select coalesce(max(id), 0)::int as id from audit_events`;
  return id;
}

/**
 * An admin who minted a key for a viewer: the admin's client, account and
 * record as an import gives it back, and the viewer's key.
 */
async function minter(svc: TestService) {
  const admin = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const key = await createKey(svc, viewer.account.id, "minted", admin.client);
  const { username, name, email } = admin.account;
  return { admin, key, record: { username, name, email } };
}

/** What a change left: its records, whether the minted key still works, whether the admin's session does. */
async function outcome(
  svc: TestService,
  since: number,
  m: Awaited<ReturnType<typeof minter>>,
) {
  const keyAnswer = await keyClient(svc, m.key.key).GET("/api/auth/me");
  const sessionAnswer = await m.admin.client.GET("/api/auth/me");
  return {
    records: await recordsSince(svc, since),
    key: keyAnswer.response.status,
    session: sessionAnswer.response.status,
  };
}

Deno.test("demoting an admin who minted keys gives the same records and revocations through the API and through an import", async () => {
  const svc = await service();
  const byApi = await minter(svc);
  let since = await lastRecord(svc);
  const patched = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: byApi.admin.account.id } },
    body: { role: "viewer" },
  });
  assertEquals(patched.response.status, 200);
  const api = await outcome(svc, since, byApi);

  const byImport = await minter(svc);
  since = await lastRecord(svc);
  const { done } = await runImport(
    svc,
    ndjson([{ ...byImport.record, role: "viewer" }]),
    { query: "?onConflict=update" },
  );
  assertEquals(done.updated, 1);
  const imported = await outcome(svc, since, byImport);

  assertEquals(api, {
    records: [
      { action: "user.role_changed", details: { from: "admin", to: "viewer" } },
      {
        action: "key.revoked",
        details: { keyId: "key", name: "minted", reason: "minter removed" },
      },
    ],
    key: 401,
    session: 200,
  });
  assertEquals(imported, api);
});

Deno.test("disabling an admin who minted keys gives the same records, revocations and ended sessions through the API and through an import", async () => {
  const svc = await service();
  const byApi = await minter(svc);
  let since = await lastRecord(svc);
  const disabled = await svc.admin.POST("/api/users/{id}/disable", {
    params: { path: { id: byApi.admin.account.id } },
    body: { reason: "left the company" },
  });
  assertEquals(disabled.response.status, 200);
  const api = await outcome(svc, since, byApi);

  const byImport = await minter(svc);
  since = await lastRecord(svc);
  const { done } = await runImport(
    svc,
    ndjson([{ ...byImport.record, disabled: { reason: "left the company" } }]),
    { query: "?onConflict=update" },
  );
  assertEquals(done.updated, 1);
  const imported = await outcome(svc, since, byImport);

  assertEquals(api, {
    records: [
      {
        action: "user.disabled",
        details: { reason: "left the company", until: null },
      },
      {
        action: "key.revoked",
        details: { keyId: "key", name: "minted", reason: "minter removed" },
      },
    ],
    key: 401,
    session: 401,
  });
  assertEquals(imported, api);
});

Deno.test("an import records only the profile fields that changed, as `user.updated` `{changed}`", async () => {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  const since = await lastRecord(svc);
  const { done } = await runImport(
    svc,
    ndjson([
      {
        username: viewer.account.username,
        name: "A New Name",
        email: viewer.account.email,
        role: "viewer",
      },
    ]),
    { query: "?onConflict=update" },
  );
  assertEquals(done.updated, 1);
  assertEquals(await recordsSince(svc, since), [
    { action: "user.updated", details: { changed: ["name"] } },
  ]);
});
