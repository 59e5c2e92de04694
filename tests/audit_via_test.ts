/**
 * Every record says which door it came through (`via`): `api` for the HTTP
 * API with a session or a key (logins included), `scim` for a connection's
 * writes under /scim/v2, `import` for an import job's records, and null for
 * the service itself (the first admin at startup, the housekeeping sweep).
 * The feed carries it as the trail has it; the chain verifies with them,
 * and a record in the text an older release writes (no door) still
 * verifies beside them.
 */
import {
  type AuditRecord,
  auditStream,
  createUserAdminClient,
} from "@user-admin/client";
import { verifyChain } from "../src/audit/verify.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { ndjson, person, runImport } from "./support/imports.ts";
import {
  ADMIN,
  newUser,
  sharedService,
  type TestService,
} from "./support/service.ts";
import {
  clearScim,
  createConnection,
  patchOp,
  scimClient,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

/** The whole trail as the API shows it, oldest first. */
async function trail(svc: TestService): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await svc.admin.GET("/api/audit", {
      params: { query: { limit: 1000, ...(before ? { before } : {}) } },
    });
    assert(page.data, JSON.stringify(page.error));
    records.push(...page.data);
    if (page.data.length < 1000) return records.reverse();
    before = page.data.at(-1)!.id;
  }
}

/** The records of this action about this username, oldest first. */
const about = (records: AuditRecord[], action: string, username: string) =>
  records.filter((r) => r.action === action && r.target?.username === username);

/** The chain checked as `deno task audit:verify` checks it, in this process. */
async function assertChainIntact(svc: TestService) {
  await svc.store.audit.seal();
  const result = await svc.store.audit.walk(verifyChain);
  assert(result.ok, JSON.stringify(result));
}

Deno.test("the API's records say via api: a create with a session, one with an API key, and a login", async () => {
  const svc = await service();
  const bySession = await svc.admin.POST("/api/users", {
    body: newUser("via-session"),
  });
  assertEquals(bySession.response.status, 201);
  const { key } = await createKey(svc, svc.adminAccount.id, "via-key");
  const byKey = await keyClient(svc, key).POST("/api/users", {
    body: newUser("via-key"),
  });
  assertEquals(byKey.response.status, 201);
  const login = await svc.client().login("via-session", "via-session-password");
  assert(login.ok);

  const records = await trail(svc);
  const [session] = about(records, "user.created", "via-session");
  assertEquals(
    [session.via, session.actor],
    ["api", { id: svc.adminAccount.id, username: ADMIN.username }],
  );
  const [withKey] = about(records, "user.created", "via-key");
  assertEquals([withKey.via, withKey.actor?.keyId === undefined], [
    "api",
    false,
  ]);
  const [loggedIn] = about(records, "login.succeeded", "via-session");
  assertEquals(loggedIn.via, "api");
  const [minted] = records.filter((r) =>
    r.action === "key.created" && r.details.name === "via-key"
  );
  assertEquals(minted.via, "api");
  await assertChainIntact(svc);
});

Deno.test("a SCIM connection's create and patch say via scim; the connection's creation by an admin says via api", async () => {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Via IdP");
  const idp = scimClient(svc, conn.token);
  const created = await idp.post("/Users", {
    userName: "via-scim@example.com",
    displayName: "Via Scim",
  });
  assertEquals(created.status, 201);
  const patched = await idp.patch(
    `/Users/${created.body.id}`,
    patchOp({ op: "replace", path: "active", value: false }),
  );
  assertEquals(patched.status, 200);

  const records = await trail(svc);
  const connection = { id: conn.id, name: "Via IdP" };
  const [create] = about(records, "user.created", "via-scim@example.com");
  assertEquals(
    [create.via, create.actor, create.details.connection],
    ["scim", null, connection],
  );
  const [disable] = about(records, "user.disabled", "via-scim@example.com");
  assertEquals(
    [disable.via, disable.actor, disable.details.connection],
    ["scim", null, connection],
  );
  const [made] = records.filter((r) =>
    r.action === "connection.created" && r.details.name === "Via IdP"
  );
  assertEquals(made.via, "api");

  // The change feed carries the door as the trail has it (over the port,
  // with a client of its own: a stream never ends for the harness's fetch).
  const reader = createUserAdminClient({ baseUrl: svc.baseUrl });
  assert((await reader.login(ADMIN.username, ADMIN.password)).ok);
  const stop = new AbortController();
  const feed = auditStream({
    client: reader,
    after: create.id - 1,
    signal: stop.signal,
  });
  const streamed = (await feed.next()).value!;
  stop.abort();
  assertEquals(streamed, create);

  await clearScim(svc);
  await assertChainIntact(svc);
});

Deno.test("an import's records say via import: the user it created, and its start and end", async () => {
  const svc = await service();
  const { done } = await runImport(svc, ndjson([person("via-imported")]));
  assertEquals(done.status, "finished");

  const records = await trail(svc);
  const [created] = about(records, "user.created", "via-imported");
  assertEquals(
    [created.via, created.actor],
    ["import", { id: svc.adminAccount.id, username: ADMIN.username }],
  );
  const job = records.filter((r) =>
    (r.action === "import.started" || r.action === "import.finished") &&
    r.details.importId === done.id
  );
  assertEquals(job.map((r) => [r.action, r.via]), [
    ["import.started", "import"],
    ["import.finished", "import"],
  ]);
  await assertChainIntact(svc);
});

Deno.test("the service's own records say via null: the first admin at startup, and a disable the housekeeping sweep saw run out", async () => {
  const svc = await service();
  const records = await trail(svc);
  const [bootstrapped] = records.filter((r) =>
    r.action === "admin.bootstrapped"
  );
  assertEquals(
    [bootstrapped.via, bootstrapped.actor, bootstrapped.target?.username],
    [null, null, ADMIN.username],
  );

  const { account } = await svc.userClient("viewer", {
    username: "via-expired",
  });
  const until = new Date(Date.now() + 3_600_000).toISOString();
  assert((await svc.admin.disableUser(account.id, { until })).ok);
  await svc.sql`
    update users set disabled_until = now() - interval '1 second'
    where id = ${account.id}`;
  // The sweep: the service's own (every 250 ms in the tests), or this call.
  await svc.store.users.recordExpiredDisables(NO_DEADLINE);
  const after = await trail(svc);
  const [disabled] = about(after, "user.disabled", "via-expired");
  assertEquals(disabled.via, "api");
  const [ranOut] = about(after, "user.enabled", "via-expired");
  assertEquals(
    [ranOut.via, ranOut.actor, ranOut.details],
    [null, null, { expired: true }],
  );
  await assertChainIntact(svc);
});

Deno.test("records in an older release's text (no door; with and without a key) seal beside records with one and verify, read as via null", async () => {
  const svc = await service();
  // Written out as a release before doors wrote them: eight elements, or
  // nine with the actor's key id; then one of this release's, by the API.
  const id = svc.adminAccount.id;
  const older = [
    `"logout",${id},"admin",${id},"admin",{},"old-1","192.0.2.1"]`,
    `"user.deleted",${id},"admin",99,"gone",{},"old-2","192.0.2.2",7]`,
  ];
  for (const tail of older) {
    await svc.sql`insert into audit_pending (tail) values (${tail})`;
  }
  const created = await svc.admin.POST("/api/users", {
    body: newUser("via-beside-old"),
  });
  assertEquals(created.response.status, 201);
  await svc.store.audit.seal();

  const records = await trail(svc);
  const old = records.filter((r) => r.requestId?.startsWith("old-"));
  assertEquals(
    old.map((r) => [r.requestId, r.via, r.actor?.keyId ?? null]),
    [["old-1", null, null], ["old-2", null, 7]],
  );
  const [fresh] = about(records, "user.created", "via-beside-old");
  assertEquals(fresh.via, "api");
  assert(fresh.id > old[1].id);
  await assertChainIntact(svc);
});
