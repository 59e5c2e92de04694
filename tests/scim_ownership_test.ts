/**
 * Which users a provisioning connection may write: those it created, and a
 * viewer no other connection owns, taken over on its first write to them.
 * Admins it did not make admin through its adminGroups, and other
 * connections' users, are read-only to it (403 `User is managed elsewhere`,
 * nothing changed); its groups set the role of its own users only, and a
 * deleted connection's groups give nothing.
 */
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  createConnection,
  freshScim,
  patchOp,
  scimClient,
  scimState,
  USER_SCHEMA,
} from "./scim_support.ts";

const fresh = freshScim(sharedService({}, { bcryptCost: 4 }));

/** The audit records of `action` concerning user `target`, newest first. */
async function records(
  svc: TestService,
  action: string,
  target: string | number,
) {
  const { data, response } = await svc.admin.GET("/api/audit", {
    params: {
      query: { action: action as "user.created", targetId: Number(target) },
    },
  });
  assertEquals(response.status, 200);
  return data!;
}

async function role(svc: TestService, id: string | number) {
  const { data } = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: Number(id) } },
  });
  return data!.role;
}

/** Asserts the answer is the 403 of a user managed elsewhere. */
function assertElsewhere(answer: { status: number; body: unknown }) {
  assertScimError(answer as never, 403);
  assertEquals(
    (answer.body as { detail: string }).detail,
    "User is managed elsewhere",
  );
}

Deno.test("a connection cannot set the password of, re-enable, PATCH, replace or delete an admin made through /api; reads stay", async () => {
  const svc = await fresh();
  const idp = scimClient(svc, (await createConnection(svc, "Okta")).token);
  const { account, password } = await svc.userClient("admin", {
    username: "root2",
    email: "root2@example.com",
  });
  const disabled = await svc.admin.POST("/api/users/{id}/disable", {
    params: { path: { id: account.id } },
  });
  assertEquals(disabled.response.status, 200);
  const read = await idp.get(`/Users/${account.id}`);
  assertEquals([read.status, read.body.userName], [200, "root2"]);
  const before = await scimState(svc);
  const path = `/Users/${account.id}`;
  const answers = [
    await idp.patch(
      path,
      patchOp({ op: "replace", path: "password", value: "a new long pass 1" }),
    ),
    await idp.patch(
      path,
      patchOp({ op: "replace", path: "active", value: true }),
    ),
    await idp.patch(
      path,
      patchOp({ op: "replace", path: "displayName", value: "Owned" }),
    ),
    await idp.put(path, {
      schemas: [USER_SCHEMA],
      userName: "root2",
      password: "a new long pass 2",
      active: true,
    }),
    await idp.delete(path),
    // The first admin too.
    await idp.delete(`/Users/${svc.adminAccount.id}`),
    await idp.patch(
      `/Users/${svc.adminAccount.id}`,
      patchOp({ op: "replace", path: "password", value: "a new long pass 3" }),
    ),
  ];
  for (const answer of answers) assertElsewhere(answer);
  assertEquals(await scimState(svc), before);
  // The password is the one /api gave, once enabled again through /api.
  await svc.admin.POST("/api/users/{id}/enable", {
    params: { path: { id: account.id } },
  });
  const login = await svc.client().login("root2", password);
  assertEquals(login.ok, true);
});

Deno.test("a connection cannot write another connection's users, nor change their role through its groups", async () => {
  const svc = await fresh();
  const okta = scimClient(svc, (await createConnection(svc, "Okta")).token);
  const entra = scimClient(
    svc,
    (await createConnection(svc, "Entra", ["Entra Admins"])).token,
  );
  const made = await okta.post("/Users", {
    userName: "ann@example.com",
    externalId: "okta-ann",
  });
  assertEquals(made.status, 201);
  const path = `/Users/${made.body.id}`;
  assertEquals((await entra.get(path)).status, 200);
  const before = await scimState(svc);
  assertElsewhere(
    await entra.patch(
      path,
      patchOp({ op: "replace", path: "displayName", value: "Mine" }),
    ),
  );
  assertElsewhere(
    await entra.put(path, { userName: "ann@example.com", active: false }),
  );
  assertElsewhere(
    await entra.patch(
      path,
      patchOp({ op: "replace", path: "externalId", value: "entra-ann" }),
    ),
  );
  assertElsewhere(await entra.delete(path));
  assertElsewhere(
    await entra.post("/Groups", {
      displayName: "Entra Admins",
      members: [{ value: made.body.id }],
    }),
  );
  assertEquals(await scimState(svc), before);
  assertEquals(await role(svc, made.body.id), "viewer");
  // A group that would not change their role may hold them.
  const plain = await entra.post("/Groups", {
    displayName: "Everyone",
    members: [{ value: made.body.id }],
  });
  assertEquals(plain.status, 201);
  // A rename that would make them admin is a change of their role.
  assertElsewhere(
    await entra.patch(
      `/Groups/${plain.body.id}`,
      patchOp({ op: "replace", path: "displayName", value: "entra admins" }),
    ),
  );
  assertEquals(await role(svc, made.body.id), "viewer");
  // Its own connection still writes them.
  const own = await okta.patch(
    path,
    patchOp({ op: "replace", path: "displayName", value: "Ann" }),
  );
  assertEquals([own.status, own.body.displayName], [200, "Ann"]);
});

Deno.test("a viewer made through /api is taken over on a connection's first write, recorded scim.user_linked, and is then read-only to another", async () => {
  const svc = await fresh();
  const conn = await createConnection(svc, "Okta");
  const okta = scimClient(svc, conn.token);
  const entra = scimClient(svc, (await createConnection(svc, "Entra")).token);
  const { account } = await svc.userClient("viewer", {
    username: "vic",
    email: "vic@example.com",
  });
  const path = `/Users/${account.id}`;
  // A read takes nothing over.
  assertEquals((await okta.get(path)).status, 200);
  assertEquals(await records(svc, "scim.user_linked", account.id), []);
  const first = await okta.patch(
    path,
    patchOp({ op: "replace", path: "displayName", value: "Vic" }),
  );
  assertEquals(first.status, 200);
  const second = await okta.patch(
    path,
    patchOp({ op: "replace", path: "displayName", value: "Victor" }),
  );
  assertEquals(second.status, 200);
  const linked = await records(svc, "scim.user_linked", account.id);
  assertEquals(
    linked.map((r) => [r.actor, r.target?.id, r.details]),
    [[null, account.id, { connection: { id: conn.id, name: "Okta" } }]],
  );
  const before = await scimState(svc);
  assertElsewhere(
    await entra.patch(
      path,
      patchOp({ op: "replace", path: "displayName", value: "Entra's" }),
    ),
  );
  assertElsewhere(await entra.delete(path));
  assertEquals(await scimState(svc), before);
});

Deno.test("a connection without admin groups cannot demote the only admin by putting them in a group", async () => {
  const svc = await fresh();
  const idp = scimClient(svc, (await createConnection(svc, "Okta")).token);
  const only = String(svc.adminAccount.id);
  const { data: admins } = await svc.admin.GET("/api/users", {
    params: { query: { role: "admin" } },
  });
  assertEquals(admins!.map((u) => u.id), [svc.adminAccount.id]);
  const before = await scimState(svc);
  assertElsewhere(
    await idp.post("/Groups", {
      displayName: "Staff",
      members: [{ value: only }],
    }),
  );
  assertEquals(await scimState(svc), before);
  const empty = await idp.post("/Groups", {
    displayName: "Staff",
    members: [],
  });
  assertEquals(empty.status, 201);
  assertElsewhere(
    await idp.patch(
      `/Groups/${empty.body.id}`,
      patchOp({ op: "add", path: "members", value: [{ value: only }] }),
    ),
  );
  assertElsewhere(
    await idp.put(`/Groups/${empty.body.id}`, {
      displayName: "Staff",
      members: [{ value: only }],
    }),
  );
  const me = await svc.admin.GET("/api/auth/me");
  assertEquals(me.data!.role, "admin");
  assertEquals(await records(svc, "user.role_changed", only), []);
});

Deno.test("a deleted connection's groups give nothing from then on: its admins by them become viewers, recorded as the deleting admin's", async () => {
  const svc = await fresh();
  const okta = await createConnection(svc, "Okta", ["Admins"]);
  const idp = scimClient(svc, okta.token);
  const made = await idp.post("/Users", { userName: "ada@example.com" });
  const id = made.body.id as string;
  const group = await idp.post("/Groups", {
    displayName: "Admins",
    members: [{ value: id }],
  });
  assertEquals(group.status, 201);
  assertEquals(await role(svc, id), "admin");
  const gone = await svc.admin.DELETE("/api/scim/connections/{id}", {
    params: { path: { id: okta.id } },
  });
  assertEquals(gone.response.status, 200);
  assertEquals(await role(svc, id), "viewer");
  const [demoted] = await records(svc, "user.role_changed", id);
  assertEquals(
    [demoted.actor?.id, demoted.target?.id, demoted.details],
    [svc.adminAccount.id, Number(id), {
      from: "admin",
      to: "viewer",
      connection: { id: okta.id, name: "Okta" },
    }],
  );
  // Another connection's change of the user's groups does not count the
  // deleted one's: it takes the viewer over, and its groups alone decide.
  const entra = scimClient(
    svc,
    (await createConnection(svc, "Entra", ["Entra Admins"])).token,
  );
  const staff = await entra.post("/Groups", {
    displayName: "Staff",
    members: [{ value: id }],
  });
  assertEquals(staff.status, 201);
  assertEquals(await role(svc, id), "viewer");
  assertEquals((await records(svc, "scim.user_linked", id)).length, 1);
});
