/**
 * SCIM 2.0 as Okta and Microsoft Entra ID drive it: their documented
 * request sequences replayed over a real HTTP server (Okta's "SCIM 2.0
 * protocol reference" and Microsoft's "Develop a SCIM endpoint" tutorial),
 * and the provisioning connections admins manage under /api/scim/connections.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import {
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  ENTERPRISE,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  patchOp,
  SCIM_MEDIA_TYPE,
  scimClient,
  USER_SCHEMA,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

async function fresh() {
  const svc = await service();
  await clearScim(svc);
  return svc;
}

const q = (filter: string) => encodeURIComponent(filter);

/** The audit records of `action`, newest first. */
async function records(svc: TestService, action: string) {
  const { data } = await svc.admin.GET("/api/audit", {
    params: { query: { action: action as "user.created" } },
  });
  return data!;
}

async function detail(svc: TestService, id: string | number) {
  const { data } = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: Number(id) } },
  });
  return data!;
}

Deno.test("a connection is created with a usc_ token shown once and kept as its SHA-256; list, get, rename and delete", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Okta", ["User Admins"]);
  assertEquals(Object.keys(conn).sort(), [
    "adminGroups",
    "createdAt",
    "id",
    "lastUsedAt",
    "name",
    "token",
  ]);
  assertMatch(conn.token, /^usc_[A-Za-z0-9_-]{43}$/);
  const [row] = await svc.sql<{ token_hash: Uint8Array }[]>`
    select token_hash from scim_connections where id = ${conn.id}`;
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(conn.token)),
  );
  assertEquals([...row.token_hash], [...digest]);

  const list = await svc.admin.GET("/api/scim/connections");
  assertEquals(list.data!.map((c) => c.name), ["Okta"]);
  assert(!JSON.stringify(list.data).includes(conn.token));
  const one = await svc.admin.GET("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  assertEquals(one.data!.adminGroups, ["User Admins"]);

  const renamed = await svc.admin.PATCH("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
    body: { name: "Okta production" },
  });
  assertEquals(renamed.data!.name, "Okta production");
  assertEquals(renamed.data!.adminGroups, ["User Admins"]);
  const bad = await svc.admin.POST("/api/scim/connections", {
    body: { name: "" },
  });
  assertEquals(bad.response.status, 400);
  assertEquals(bad.error, { error: "Invalid provisioning connection" });

  const idp = scimClient(svc, conn.token);
  assertEquals((await idp.get("/Users")).status, 200);
  const gone = await svc.admin.DELETE("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  assertEquals(gone.response.status, 200);
  const revoked = await idp.get("/Users");
  assertScimError(revoked, 401);
  assertEquals(
    revoked.headers.get("www-authenticate")?.startsWith("Bearer"),
    true,
  );
  const again = await svc.admin.GET("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  assertEquals(again.response.status, 404);
  assertEquals(again.error, { error: "Provisioning connection not found" });
  assertEquals(
    (await records(svc, "connection.created"))[0].details,
    { connectionId: conn.id, name: "Okta", adminGroups: ["User Admins"] },
  );
  assertEquals((await records(svc, "connection.updated")).length, 1);
  assertEquals((await records(svc, "connection.deleted")).length, 1);
});

Deno.test("connections are for admins only, and their tokens answer 401 under /api", async () => {
  const svc = await fresh();
  const anonymous = await svc.fetch("/api/scim/connections");
  assertEquals(anonymous.status, 401);
  await anonymous.body?.cancel();
  const { client: viewer } = await svc.userClient("viewer");
  const refused = await viewer.GET("/api/scim/connections");
  assertEquals(refused.response.status, 403);
  const conn = await createConnection(svc);
  for (const path of ["/api/auth/me", "/api/users", "/api/scim/connections"]) {
    const res = await svc.fetch(path, {
      headers: { authorization: `Bearer ${conn.token}` },
    });
    assertEquals(res.status, 401, path);
    assertEquals(await res.json(), { error: "Unauthorised" });
  }
});

Deno.test("/scim/v2 answers 401 with WWW-Authenticate: Bearer without a token, with a session cookie, an API key or a malformed token; discovery needs none", async () => {
  const svc = await fresh();
  const cookie = await loginCookie(svc, {
    username: "admin",
    password: "admin-pass-1234",
  });
  for (
    const headers of [
      {},
      { cookie },
      { authorization: "Bearer usc_short" },
      { authorization: `Basic ${btoa("a:b")}` },
    ] as Record<string, string>[]
  ) {
    const res = await svc.fetch("/scim/v2/Users", { headers });
    assertEquals(res.status, 401);
    assertEquals(res.headers.get("www-authenticate"), 'Bearer realm="scim"');
    assertEquals(res.headers.get("content-type"), SCIM_MEDIA_TYPE);
    const body = await res.json();
    assertEquals(body.status, "401");
    assertEquals(body.schemas, ["urn:ietf:params:scim:api:messages:2.0:Error"]);
  }
  for (
    const path of ["/ServiceProviderConfig", "/ResourceTypes", "/Schemas"]
  ) {
    const res = await svc.fetch(`/scim/v2${path}`);
    assertEquals(res.status, 200, path);
    assertEquals(res.headers.get("content-type"), SCIM_MEDIA_TYPE);
    await res.body?.cancel();
  }
  const config = await (await svc.fetch("/scim/v2/ServiceProviderConfig"))
    .json();
  assertEquals(config.patch.supported, true);
  assertEquals(config.filter, { supported: true, maxResults: 1000 });
  assertEquals(config.etag.supported, true);
  assertEquals(config.bulk.supported, true);
  const schemas = await (await svc.fetch("/scim/v2/Schemas")).json();
  assertEquals(
    schemas.Resources.map((s: { id: string }) => s.id),
    [USER_SCHEMA, ENTERPRISE, GROUP_SCHEMA],
  );
});

Deno.test("Okta: a user is looked up, created, read, updated, deactivated, reactivated, given a password and deleted", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Okta");
  const okta = scimClient(svc, conn.token);

  // 1. Okta checks whether the user exists.
  const lookup = await okta.get(
    `/Users?filter=${
      q('userName eq "test.user@okta.local"')
    }&startIndex=1&count=100`,
  );
  assertEquals(lookup.status, 200);
  assertEquals(lookup.body, {
    schemas: [LIST_SCHEMA],
    totalResults: 0,
    startIndex: 1,
    itemsPerPage: 0,
    Resources: [],
  });

  // 2. Create, as Okta's reference shows the request.
  const created = await okta.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "test.user@okta.local",
    name: { givenName: "Test", familyName: "User" },
    emails: [{ primary: true, value: "test.user@okta.local", type: "work" }],
    displayName: "Test User",
    locale: "en-US",
    externalId: "00ujl29u0le5T6Aj10h7",
    groups: [],
    password: "1mz050nq",
    active: true,
  });
  assertEquals(created.status, 201);
  assertEquals(created.headers.get("content-type"), SCIM_MEDIA_TYPE);
  const id = created.body.id;
  assertMatch(id, /^\d+$/);
  assertEquals(
    created.headers.get("location")?.endsWith(`/scim/v2/Users/${id}`),
    true,
  );
  assertEquals(created.body.userName, "test.user@okta.local");
  assertEquals(created.body.externalId, "00ujl29u0le5T6Aj10h7");
  assertEquals(created.body.locale, "en-US");
  assertEquals(created.body.active, true);
  assertEquals(created.body.password, undefined);
  const user = await detail(svc, id);
  assertEquals(
    [user.username, user.name, user.email, user.role],
    ["test.user@okta.local", "Test User", "test.user@okta.local", "viewer"],
  );
  // The password Okta set logs in.
  await loginCookie(svc, {
    username: "test.user@okta.local",
    password: "1mz050nq",
  });

  // 3. Read back: what Okta wrote, and the ETag /api gives.
  const read = await okta.get(`/Users/${id}`);
  assertEquals(read.status, 200);
  assertEquals(read.body.name, { givenName: "Test", familyName: "User" });
  const apiTag = (await svc.adminFetch(`/api/users/${id}`)).headers.get("etag");
  assertEquals(read.body.meta.version, apiTag);
  assertEquals(read.headers.get("etag"), apiTag);
  // Found by filter, under the canonical key.
  const found = await okta.get(
    `/Users?filter=${q('userName eq "TEST.USER@okta.local"')}`,
  );
  assertEquals(found.body.totalResults, 1);
  assertEquals(found.body.Resources[0].id, id);

  // 4. Profile update: Okta sends the whole user with PUT.
  const put = await okta.put(`/Users/${id}`, {
    schemas: [USER_SCHEMA],
    id,
    userName: "test.user@okta.local",
    name: { givenName: "Another", familyName: "User" },
    emails: [{ primary: true, value: "test.user@okta.local", type: "work" }],
    displayName: "Another User",
    locale: "en-US",
    externalId: "00ujl29u0le5T6Aj10h7",
    groups: [],
    active: true,
  });
  assertEquals(put.status, 200);
  assertEquals(put.body.name.givenName, "Another");
  assertEquals((await detail(svc, id)).name, "Another User");
  // A PUT without a password keeps it.
  await loginCookie(svc, {
    username: "test.user@okta.local",
    password: "1mz050nq",
  });

  // 5. Deactivate: PATCH replace without a path.
  const session = await loginCookie(svc, {
    username: "test.user@okta.local",
    password: "1mz050nq",
  });
  const off = await okta.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", value: { active: false } }),
  );
  assertEquals(off.status, 200);
  assertEquals(off.body.active, false);
  assertEquals(
    (await detail(svc, id)).disabled?.reason,
    "Deprovisioned by Okta",
  );
  const me = await svc.fetch("/api/auth/me", { headers: { cookie: session } });
  assertEquals(me.status, 401, "the user's sessions ended");
  await me.body?.cancel();
  const disabled = (await records(svc, "user.disabled"))[0];
  assertEquals(disabled.actor, null);
  assertEquals(disabled.details, {
    reason: "Deprovisioned by Okta",
    until: null,
    connection: { id: conn.id, name: "Okta" },
  });
  const inactive = await okta.get(`/Users?filter=${q("active eq false")}`);
  assertEquals(inactive.body.Resources.map((r: { id: string }) => r.id), [id]);

  // 6. Reactivate.
  const on = await okta.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", value: { active: true } }),
  );
  assertEquals(on.body.active, true);
  assertEquals((await detail(svc, id)).disabled, null);
  assertEquals((await records(svc, "user.enabled"))[0].details, {
    connection: { id: conn.id, name: "Okta" },
  });

  // 7. Password sync.
  const pw = await okta.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", value: { password: "an0ther-passw0rd" } }),
  );
  assertEquals(pw.status, 200);
  await loginCookie(svc, {
    username: "test.user@okta.local",
    password: "an0ther-passw0rd",
  });

  // 8. Delete.
  const deleted = await okta.delete(`/Users/${id}`);
  assertEquals(deleted.status, 204);
  assertScimError(await okta.get(`/Users/${id}`), 404);
  const userDeleted = (await records(svc, "user.deleted"))[0];
  assertEquals(userDeleted.target?.username, "test.user@okta.local");
  assertEquals(userDeleted.details, {
    connection: { id: conn.id, name: "Okta" },
  });
  const userCreated = (await records(svc, "user.created"))[0];
  assertEquals(userCreated.actor, null);
  assertEquals(userCreated.details.connection, { id: conn.id, name: "Okta" });
  const updated = (await records(svc, "user.updated"))[0];
  assertEquals(updated.details.connection, { id: conn.id, name: "Okta" });
});

Deno.test("Okta Group Push: a group is created, renamed, given members and losing them, and deleted; admin groups make admins at once", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Okta", ["User Admins"]);
  const okta = scimClient(svc, conn.token);
  const ids: string[] = [];
  for (const name of ["ann", "bob"]) {
    const made = await okta.post("/Users", {
      schemas: [USER_SCHEMA],
      userName: `${name}@example.com`,
      name: { givenName: name, familyName: "Doe" },
      emails: [{ primary: true, value: `${name}@example.com`, type: "work" }],
      active: true,
    });
    assertEquals(made.status, 201);
    ids.push(made.body.id);
  }
  // Okta creates the pushed group without members, then patches them in.
  const group = await okta.post("/Groups", {
    schemas: [GROUP_SCHEMA],
    displayName: "Test SCIMv2",
    members: [],
  });
  assertEquals(group.status, 201);
  const gid = group.body.id;
  const renamed = await okta.patch(
    `/Groups/${gid}`,
    patchOp({ op: "replace", value: { id: gid, displayName: "user admins" } }),
  );
  assertEquals(renamed.status, 200);
  assertEquals(renamed.body.displayName, "user admins");
  const added = await okta.patch(
    `/Groups/${gid}`,
    patchOp({
      op: "add",
      path: "members",
      value: ids.map((value, i) => ({
        value,
        display: `${["ann", "bob"][i]}@example.com`,
      })),
    }),
  );
  assertEquals(added.status, 200);
  assertEquals(
    added.body.members.map((m: { value: string }) => m.value),
    ids,
  );
  // Membership of an admin group (names compared without regard to case).
  assertEquals((await detail(svc, ids[0])).role, "admin");
  assertEquals((await detail(svc, ids[1])).role, "admin");
  const changes = await records(svc, "user.role_changed");
  assertEquals(changes.length, 2);
  assertEquals(changes[0].details.connection, { id: conn.id, name: "Okta" });
  assertEquals(changes[0].details.to, "admin");

  const removed = await okta.patch(
    `/Groups/${gid}`,
    patchOp({ op: "remove", path: `members[value eq "${ids[1]}"]` }),
  );
  assertEquals(
    removed.body.members.map((m: { value: string }) => m.value),
    [ids[0]],
  );
  assertEquals((await detail(svc, ids[1])).role, "viewer");
  const byMember = await okta.get(
    `/Groups?filter=${q(`members.value eq "${ids[0]}"`)}`,
  );
  assertEquals(byMember.body.totalResults, 1);
  const groupUpdated = (await records(svc, "group.updated"))[0];
  assertEquals(groupUpdated.details.removed, 1);
  assertEquals(groupUpdated.details.connection, { id: conn.id, name: "Okta" });

  // The connection's admin groups change: roles follow at once.
  await svc.admin.PATCH("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
    body: { adminGroups: [] },
  });
  assertEquals((await detail(svc, ids[0])).role, "viewer");

  const gone = await okta.delete(`/Groups/${gid}`);
  assertEquals(gone.status, 204);
  assertScimError(await okta.get(`/Groups/${gid}`), 404);
  assertEquals((await records(svc, "group.created")).length, 1);
  assertEquals((await records(svc, "group.deleted")).length, 1);
});

Deno.test('Entra: a user is created with the enterprise extension, patched in Entra\'s forms, disabled with "False" and deleted', async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Entra");
  const entra = scimClient(svc, conn.token);

  const none = await entra.get(
    `/Users?filter=${q('userName eq "non-existent user"')}`,
  );
  assertEquals(none.body.totalResults, 0);
  const created = await entra.post("/Users", {
    schemas: [USER_SCHEMA, ENTERPRISE],
    externalId: "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
    userName: "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
    active: true,
    emails: [{
      primary: true,
      type: "work",
      value: "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com",
    }],
    meta: { resourceType: "User" },
    name: {
      formatted: "givenName familyName",
      familyName: "familyName",
      givenName: "givenName",
    },
    roles: [],
    [ENTERPRISE]: { department: "Engineering" },
  });
  assertEquals(created.status, 201);
  const id = created.body.id;
  assertEquals(created.body[ENTERPRISE], { department: "Engineering" });
  assertEquals(created.body.schemas, [USER_SCHEMA, ENTERPRISE]);
  assertEquals((await detail(svc, id)).name, "givenName familyName");
  const byExternal = await entra.get(
    `/Users?filter=${
      q('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')
    }`,
  );
  assertEquals(byExternal.body.Resources[0].id, id);

  // Entra's PATCH: capitalised operations, value-path filters.
  const changed = await entra.patch(
    `/Users/${id}`,
    patchOp(
      {
        op: "Replace",
        path: 'emails[type eq "work"].value',
        value: "updatedEmail@microsoft.com",
      },
      { op: "Replace", path: "name.familyName", value: "updatedFamilyName" },
    ),
  );
  assertEquals(changed.status, 200, JSON.stringify(changed.body));
  assertEquals(changed.body.emails[0].value, "updatedEmail@microsoft.com");
  assertEquals(changed.body.name.familyName, "updatedFamilyName");
  assertEquals((await detail(svc, id)).email, "updatedEmail@microsoft.com");

  // A manager added by id, then removed.
  const manager = await entra.patch(
    `/Users/${id}`,
    patchOp({
      op: "Add",
      path: `${ENTERPRISE}:manager`,
      value: "2819c223-7f76-453a-919d-413861904646",
    }),
  );
  assertEquals(manager.body[ENTERPRISE].manager, {
    value: "2819c223-7f76-453a-919d-413861904646",
  });
  const noManager = await entra.patch(
    `/Users/${id}`,
    patchOp({ op: "Remove", path: `${ENTERPRISE}:manager` }),
  );
  assertEquals(noManager.body[ENTERPRISE], { department: "Engineering" });

  // Add and replace on a filtered value that is not there yet: created.
  const phone = await entra.patch(
    `/Users/${id}`,
    patchOp(
      {
        op: "Add",
        path: 'phoneNumbers[type eq "mobile"].value',
        value: "+1 555 0100",
      },
      {
        op: "Replace",
        path: 'addresses[type eq "work"].locality',
        value: "Redmond",
      },
    ),
  );
  assertEquals(phone.body.phoneNumbers, [{
    type: "mobile",
    value: "+1 555 0100",
  }]);
  assertEquals(phone.body.addresses, [{ type: "work", locality: "Redmond" }]);
  // Removing what is not there is no fault.
  const noop = await entra.patch(
    `/Users/${id}`,
    patchOp({ op: "Remove", path: 'ims[type eq "xmpp"]' }, {
      op: "remove",
      path: "title",
    }),
  );
  assertEquals(noop.status, 200);

  // Disable with the string "False", as Entra sends it.
  const off = await entra.patch(
    `/Users/${id}`,
    patchOp({ op: "Replace", path: "active", value: "False" }),
  );
  assertEquals(off.body.active, false);
  assertEquals(
    (await detail(svc, id)).disabled?.reason,
    "Deprovisioned by Entra",
  );
  // A PUT without active leaves the user disabled.
  const put = await entra.put(`/Users/${id}`, {
    schemas: [USER_SCHEMA],
    userName: created.body.userName,
    emails: [{
      primary: true,
      type: "work",
      value: "updatedEmail@microsoft.com",
    }],
  });
  assertEquals(put.status, 200);
  assertEquals(put.body.active, false);
  const on = await entra.patch(
    `/Users/${id}`,
    patchOp({ op: "Replace", path: "active", value: "True" }),
  );
  assertEquals(on.body.active, true);

  assertEquals((await entra.delete(`/Users/${id}`)).status, 204);
  assertEquals((await entra.delete(`/Users/${id}`)).status, 404);
});

Deno.test("Entra groups: created empty, read without members, members added and removed by value lists, renamed, deleted", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Entra", ["Admins"]);
  const entra = scimClient(svc, conn.token);
  const user = await entra.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "carol@contoso.com",
    active: true,
  });
  assertEquals(user.status, 201);
  assertEquals((await detail(svc, user.body.id)).email, "carol@contoso.com");
  const group = await entra.post("/Groups", {
    schemas: [GROUP_SCHEMA],
    externalId: "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
    displayName: "Group1DisplayName",
    meta: { resourceType: "Group" },
  });
  assertEquals(group.status, 201);
  const gid = group.body.id;
  const read = await entra.get(`/Groups/${gid}?excludedAttributes=members`);
  assertEquals(read.body.members, undefined);
  assertEquals(read.body.displayName, "Group1DisplayName");
  const byName = await entra.get(
    `/Groups?filter=${
      q('displayName eq "Group1DisplayName"')
    }&excludedAttributes=members`,
  );
  assertEquals(byName.body.totalResults, 1);

  const added = await entra.patch(
    `/Groups/${gid}`,
    patchOp({
      op: "Add",
      path: "members",
      value: [{ $ref: null, value: user.body.id }],
    }),
  );
  assertEquals(added.status, 200);
  assertEquals(added.body.members.length, 1);
  const renamed = await entra.patch(
    `/Groups/${gid}`,
    patchOp({ op: "Replace", path: "displayName", value: "admins" }),
  );
  assertEquals(renamed.body.displayName, "admins");
  assertEquals(
    (await detail(svc, user.body.id)).role,
    "admin",
    "renamed into an admin group",
  );
  const removed = await entra.patch(
    `/Groups/${gid}`,
    patchOp({
      op: "Remove",
      path: "members",
      value: [{ $ref: null, value: user.body.id }],
    }),
  );
  assertEquals(removed.body.members, []);
  assertEquals((await detail(svc, user.body.id)).role, "viewer");
  assertEquals((await entra.delete(`/Groups/${gid}`)).status, 204);
});

Deno.test("users made through /api are visible and manageable through SCIM; a deleted user leaves every group", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Okta", ["admins"]);
  const idp = scimClient(svc, conn.token);
  const { account } = await svc.userClient("viewer", {
    username: "dave",
    email: "dave@example.com",
  });
  const read = await idp.get(`/Users/${account.id}`);
  assertEquals(read.status, 200);
  assertEquals(read.body.userName, "dave");
  assertEquals(read.body.emails, [{
    value: "dave@example.com",
    type: "work",
    primary: true,
  }]);
  const group = await idp.post("/Groups", {
    displayName: "Admins",
    members: [{ value: String(account.id) }],
  });
  assertEquals((await detail(svc, account.id)).role, "admin");
  // A role changed through /api holds until the next membership change.
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "viewer" },
  });
  assertEquals((await detail(svc, account.id)).role, "viewer");
  await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  const after = await idp.get(`/Groups/${group.body.id}`);
  assertEquals(after.body.members, []);
});

Deno.test("If-Match is compared weakly: a stale version answers 412 and changes nothing; the current one, with or without W/, writes", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc);
  const idp = scimClient(svc, conn.token);
  const made = await idp.post("/Users", { userName: "erin@example.com" });
  const id = made.body.id;
  const tag = made.body.meta.version as string;
  const changed = await idp.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", path: "displayName", value: "Erin" }),
    { "if-match": `W/${tag}` },
  );
  assertEquals(changed.status, 200);
  const stale = await idp.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", path: "displayName", value: "Stale" }),
    { "if-match": tag },
  );
  assertScimError(stale, 412);
  assertEquals((await idp.get(`/Users/${id}`)).body.displayName, "Erin");
  const staleDelete = await idp.delete(`/Users/${id}`, { "if-match": tag });
  assertScimError(staleDelete, 412);
  const current = changed.body.meta.version;
  assertEquals(
    (await idp.delete(`/Users/${id}`, { "if-match": current })).status,
    204,
  );
});

Deno.test("a user's groups are those of the reading connection it is a member of, read-only, as members change; attributes and excludedAttributes take them as any other", async () => {
  const svc = await fresh();
  const okta = scimClient(svc, (await createConnection(svc, "Okta")).token);
  const entra = scimClient(svc, (await createConnection(svc, "Entra")).token);
  const made = await okta.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "gus@example.com",
  });
  assertEquals(made.status, 201);
  const uid = made.body.id;
  // In no group: no groups attribute, as RFC 7643 leaves out an empty one.
  assertEquals(made.body.groups, undefined);
  const gids: string[] = [];
  for (const displayName of ["Sales", "Admins"]) {
    const group = await okta.post("/Groups", {
      schemas: [GROUP_SCHEMA],
      displayName,
      members: [{ value: uid }],
    });
    assertEquals(group.status, 201);
    gids.push(group.body.id);
  }
  const theirs = await entra.post("/Groups", {
    schemas: [GROUP_SCHEMA],
    displayName: "Entra only",
    members: [{ value: uid }],
  });
  assertEquals(theirs.status, 201);

  const read = await okta.get(`/Users/${uid}`);
  const base = read.body.meta.location.replace(/\/Users\/\d+$/, "");
  assertMatch(base, /^http:\/\/.+\/scim\/v2$/);
  const oktaGroups = [
    {
      value: gids[0],
      display: "Sales",
      type: "direct",
      $ref: `${base}/Groups/${gids[0]}`,
    },
    {
      value: gids[1],
      display: "Admins",
      type: "direct",
      $ref: `${base}/Groups/${gids[1]}`,
    },
  ];
  assertEquals(read.body.groups, oktaGroups);
  // Each connection sees its own groups only.
  assertEquals(
    (await entra.get(`/Users/${uid}`)).body.groups.map(
      (g: { display: string }) => g.display,
    ),
    ["Entra only"],
  );
  const listed = await okta.get(
    `/Users?filter=${q('userName eq "gus@example.com"')}&attributes=groups`,
  );
  assertEquals(listed.body.Resources, [{
    schemas: [USER_SCHEMA],
    id: uid,
    groups: oktaGroups,
  }]);
  const without = await okta.get(`/Users/${uid}?excludedAttributes=groups`);
  assertEquals([without.status, without.body.groups], [200, undefined]);

  // Read-only: a PATCH naming it is refused and changes nothing; a PUT's is ignored.
  assertScimError(
    await okta.patch(
      `/Users/${uid}`,
      patchOp({
        op: "add",
        path: "groups",
        value: [{ value: theirs.body.id }],
      }),
    ),
    400,
    "mutability",
  );
  const put = await okta.put(`/Users/${uid}`, {
    schemas: [USER_SCHEMA],
    userName: "gus@example.com",
    groups: [],
  });
  assertEquals([put.status, put.body.groups], [200, oktaGroups]);

  // Membership changes show at once: out of one group, the other deleted.
  const removed = await okta.patch(
    `/Groups/${gids[0]}`,
    patchOp({ op: "remove", path: `members[value eq "${uid}"]` }),
  );
  assertEquals(removed.status, 200);
  assertEquals((await okta.get(`/Users/${uid}`)).body.groups, [oktaGroups[1]]);
  assertEquals((await okta.delete(`/Groups/${gids[1]}`)).status, 204);
  assertEquals((await okta.get(`/Users/${uid}`)).body.groups, undefined);
  assertEquals(
    (await entra.get(`/Users/${uid}`)).body.groups.length,
    1,
  );
});

Deno.test("lists page with startIndex and count, sort, and return only the attributes asked for", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc);
  const idp = scimClient(svc, conn.token);
  for (const name of ["mia", "leo", "kai", "jon", "ivy"]) {
    await idp.post("/Users", { userName: `${name}@example.com` });
  }
  const page = await idp.get(
    "/Users?sortBy=userName&sortOrder=ascending&startIndex=2&count=2&attributes=userName",
  );
  assertEquals(page.body.totalResults, 6);
  assertEquals(page.body.startIndex, 2);
  assertEquals(page.body.itemsPerPage, 2);
  assertEquals(
    page.body.Resources.map((r: Record<string, unknown>) =>
      Object.keys(r).sort()
    ),
    [["id", "schemas", "userName"], ["id", "schemas", "userName"]],
  );
  assertEquals(
    page.body.Resources.map((r: { userName: string }) => r.userName),
    ["ivy@example.com", "jon@example.com"],
  );
  // The next page in sequence, then descending.
  const next = await idp.get("/Users?sortBy=userName&startIndex=4&count=2");
  assertEquals(
    next.body.Resources.map((r: { userName: string }) => r.userName),
    ["kai@example.com", "leo@example.com"],
  );
  const down = await idp.get(
    "/Users?sortBy=userName&sortOrder=descending&count=1&excludedAttributes=emails,meta",
  );
  assertEquals(down.body.Resources[0].userName, "mia@example.com");
  assertEquals(down.body.Resources[0].emails, undefined);
  assertEquals(down.body.Resources[0].meta, undefined);
  const onlyTotal = await idp.get("/Users?count=0");
  assertEquals(onlyTotal.body, {
    schemas: [LIST_SCHEMA],
    totalResults: 6,
    startIndex: 1,
    itemsPerPage: 0,
  });
  const search = await idp.post("/Users/.search", {
    schemas: ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
    filter: 'userName sw "k"',
    attributes: ["userName"],
    startIndex: 1,
    count: 10,
  });
  assertEquals(search.status, 200);
  assertEquals(search.body.Resources, [{
    schemas: [USER_SCHEMA],
    id: search.body.Resources[0].id,
    userName: "kai@example.com",
  }]);
});
