/**
 * Delegated administration: roles (named sets of permissions) assigned to
 * users, permissions checked on every request and again in the write, no
 * escalation, keys narrowed to a subset of their minter's. Through the
 * generated client; messages written out as docs/delegation.md states them.
 */
import {
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { postgresOnly } from "./support/conditions.ts";
import { startCluster } from "./support/cluster.ts";
import { keyClient } from "./support/api-keys.ts";
import {
  CANNOT_GRANT,
  dataOf,
  FORBIDDEN,
  OUTRANKED,
  said,
} from "./delegation_support.ts";
import { sharedService, type TestService } from "./support/service.ts";
import { ageSecondFactor, userWithTotp } from "./mfa_support.ts";
import { createConnection, patchOp, scimClient } from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

let roleNames = 0;

/** A role the first admin creates; answers its id. */
async function role(
  svc: TestService,
  permissions: string[],
  by: UserAdminClient = svc.admin,
) {
  const created = await by.post("/api/roles", {
    body: { name: `role ${++roleNames} ${crypto.randomUUID()}`, permissions },
  });
  assert(created.ok, JSON.stringify(created));
  assertEquals(created.status, 201);
  return created.data.id;
}

/** Gives the role to the user as the first admin; answers the assignment's id. */
async function assign(svc: TestService, roleId: number, userId: number) {
  const created = await svc.admin.post("/api/assignments", {
    body: { roleId, userId },
  });
  assert(created.ok, JSON.stringify(created));
  return created.data.id;
}

/** A viewer signed in, holding a new role of these permissions. */
async function delegate(svc: TestService, permissions: string[]) {
  const user = await svc.userClient("viewer");
  const roleId = await role(svc, permissions);
  const assignmentId = await assign(svc, roleId, user.account.id);
  return { ...user, roleId, assignmentId };
}

const HELP_DESK = ["users:read", "users:password", "users:sessions"];

Deno.test("a help desk resets passwords and ends sessions, and gets 403 making admins, deleting or changing profiles", async () => {
  const svc = await service();
  const desk = await delegate(svc, HELP_DESK);
  const viewer = await svc.userClient("viewer");
  const id = { params: { path: { id: viewer.account.id } } };
  const c = desk.client;

  assertEquals<unknown>(await dataOf(c.get("/api/auth/permissions")), {
    permissions: HELP_DESK,
    reach: "all",
  });
  assertEquals((await c.get("/api/users")).status, 200);
  assertEquals((await c.get("/api/users/{id}", id)).status, 200);
  const reset = await c.patch("/api/users/{id}", {
    ...id,
    body: { password: "reset-by-the-desk" },
  });
  assert(reset.ok, JSON.stringify(reset));
  assert(
    (await svc.client().login(viewer.account.username, "reset-by-the-desk"))
      .ok,
  );
  const ended = await c.delete("/api/users/{id}/sessions", id);
  assert(ended.ok);
  assert(ended.data.ended >= 1);

  assertEquals(
    await said(c.patch("/api/users/{id}", { ...id, body: { role: "admin" } })),
    FORBIDDEN,
  );
  assertEquals(
    await said(
      c.patch("/api/users/{id}", { ...id, body: { name: "Renamed" } }),
    ),
    FORBIDDEN,
  );
  assertEquals(await said(c.delete("/api/users/{id}", id)), FORBIDDEN);
  assertEquals(await said(c.post("/api/users/{id}/disable", id)), FORBIDDEN);
  assertEquals(
    await said(c.post("/api/users", {
      body: {
        username: `made-${crypto.randomUUID()}`,
        name: "Made",
        email: `${crypto.randomUUID()}@example.com`,
        password: "made-password-1",
        role: "admin",
      },
    })),
    FORBIDDEN,
  );
  assertEquals(await said(c.get("/api/audit")), FORBIDDEN);
  assertEquals(await said(c.get("/api/roles")), FORBIDDEN);
  // An admin holds more than the desk: their password stays theirs.
  assertEquals(
    await said(c.patch("/api/users/{id}", {
      params: { path: { id: svc.adminAccount.id } },
      body: { password: "taken-over-admin" },
    })),
    OUTRANKED,
  );
  const [{ role: still }] = await svc.sql<{ role: string }[]>`
    select role from users where id = ${viewer.account.id}`;
  assertEquals(still, "viewer");
});

Deno.test("an auditor reads users and the trail and changes nothing; a viewer and an admin answer as before", async () => {
  const svc = await service();
  const auditor = await delegate(svc, ["users:read", "audit:read"]);
  const c = auditor.client;
  assertEquals((await c.get("/api/users")).status, 200);
  assertEquals((await c.get("/api/audit")).status, 200);
  const viewer = await svc.userClient("viewer");
  const id = { params: { path: { id: viewer.account.id } } };
  assertEquals(
    await said(
      c.patch("/api/users/{id}", { ...id, body: { password: "nope-nope-1" } }),
    ),
    FORBIDDEN,
  );
  assertEquals(await said(c.delete("/api/users/{id}/sessions", id)), FORBIDDEN);
  assertEquals(await said(c.get("/api/webhooks")), FORBIDDEN);

  assertEquals(await dataOf(viewer.client.get("/api/auth/permissions")), {
    permissions: [],
    reach: "all",
  });
  assertEquals(await said(viewer.client.get("/api/users")), FORBIDDEN);
  const all = await svc.admin.get("/api/auth/permissions");
  assert(all.ok);
  assertEquals(all.data.permissions.length, 16);
  assertEquals(all.data.permissions.slice(0, 2), [
    "users:read",
    "users:create",
  ]);
});

Deno.test("roles: unknown permissions 400, a name taken in another case 409, a stale If-Match 412; each change recorded", async () => {
  const svc = await service();
  const name = `Help desk ${crypto.randomUUID()}`;
  const created = await svc.admin.post("/api/roles", {
    body: { name, description: "Front line", permissions: HELP_DESK },
  });
  assert(created.ok);
  assertEquals(created.data.permissions, HELP_DESK);
  assertEquals(
    await said(svc.admin.post("/api/roles", {
      body: { name: "other", permissions: ["users:read", "users:fly"] },
    })),
    { ok: false, status: 400, error: "Unknown permission: users:fly" },
  );
  assertEquals(
    await said(svc.admin.post("/api/roles", {
      body: { name: name.toUpperCase(), permissions: [] },
    })),
    { ok: false, status: 409, error: "Role name already exists" },
  );
  const id = { params: { path: { id: created.data.id } } };
  const read = await svc.adminFetch(`/api/roles/${created.data.id}`);
  assertEquals(read.status, 200);
  const tag = read.headers.get("etag")!;
  await read.body?.cancel();
  // Two admins edit the role from one read: the second is told it changed.
  const first = await svc.admin.patch("/api/roles/{id}", {
    ...id,
    params: { ...id.params, header: { "if-match": tag } },
    body: { description: "Changed first" },
  });
  assert(first.ok, JSON.stringify(first));
  assertEquals(
    await said(svc.admin.patch("/api/roles/{id}", {
      ...id,
      params: { ...id.params, header: { "if-match": tag } },
      body: { description: "Changed second" },
    })),
    { ok: false, status: 412, error: "Precondition failed" },
  );
  assertEquals(
    await said(
      svc.admin.get("/api/roles/{id}", {
        params: { path: { id: 2_000_000_000 } },
      }),
    ),
    { ok: false, status: 404, error: "Role not found" },
  );

  await svc.store.audit.seal();
  const actions = await svc.sql<
    { action: string; details: { name: string } }[]
  >`
    select action, details from audit_events
    where action like 'role.%' and details->>'name' = ${name} order by id`;
  assertEquals(actions.map((a) => a.action), ["role.created", "role.updated"]);
});

Deno.test("assignments: a deleted user 404, a deleted role 404, twice 409, group fields 400; deleting a role ends its assignments, recorded", async () => {
  const svc = await service();
  const holder = await delegate(svc, ["users:read"]);
  assertEquals((await holder.client.get("/api/users")).status, 200);
  const gone = await svc.userClient("viewer");
  assert(
    (await svc.admin.delete("/api/users/{id}", {
      params: { path: { id: gone.account.id } },
    })).ok,
  );
  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: { roleId: holder.roleId, userId: gone.account.id },
    })),
    { ok: false, status: 404, error: "User not found" },
  );
  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: { roleId: holder.roleId, userId: holder.account.id },
    })),
    { ok: false, status: 409, error: "Assignment already exists" },
  );
  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: {
        roleId: holder.roleId,
        userId: holder.account.id,
        groupId: 1,
      } as never,
    })),
    { ok: false, status: 400, error: "Invalid assignment" },
  );
  const listed = await svc.admin.get("/api/assignments", {
    params: { query: { userId: holder.account.id } },
  });
  assert(listed.ok);
  assertEquals(listed.data.map((a) => a.id), [holder.assignmentId]);

  assert(
    (await svc.admin.delete("/api/roles/{id}", {
      params: { path: { id: holder.roleId } },
    })).ok,
  );
  // Seen at the holder's next request.
  assertEquals(await said(holder.client.get("/api/users")), FORBIDDEN);
  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: { roleId: holder.roleId, userId: holder.account.id },
    })),
    { ok: false, status: 404, error: "Role not found" },
  );
  await svc.store.audit.seal();
  const [ended] = await svc.sql<{ details: Record<string, unknown> }[]>`
    select details from audit_events where action = 'assignment.deleted'
      and target_id = ${holder.account.id} order by id desc limit 1`;
  assertEquals(ended.details.reason, "role deleted");
  assertEquals(ended.details.assignmentId, holder.assignmentId);
});

Deno.test("no escalation: a role manager grants only what they hold, and acts on nobody who holds more", async () => {
  const svc = await service();
  const manager = await delegate(svc, ["roles:manage", "users:read"]);
  const m = manager.client;
  assertEquals(
    await said(m.post("/api/roles", {
      body: {
        name: `wide ${crypto.randomUUID()}`,
        permissions: ["users:delete"],
      },
    })),
    CANNOT_GRANT,
  );
  const narrow = await role(svc, ["users:read"], m);
  const id = { params: { path: { id: narrow } } };
  assertEquals(
    await said(m.patch("/api/roles/{id}", {
      ...id,
      body: { permissions: ["users:read", "roles:manage", "users:delete"] },
    })),
    CANNOT_GRANT,
  );
  const adminsRole = await role(svc, ["users:delete"]);
  const viewer = await svc.userClient("viewer");
  assertEquals(
    await said(m.post("/api/assignments", {
      body: { roleId: adminsRole, userId: viewer.account.id },
    })),
    CANNOT_GRANT,
  );
  assertEquals(
    await said(m.patch("/api/roles/{id}", {
      params: { path: { id: adminsRole } },
      body: { description: "mine now" },
    })),
    CANNOT_GRANT,
  );
  assertEquals(
    await said(
      m.delete("/api/roles/{id}", { params: { path: { id: adminsRole } } }),
    ),
    CANNOT_GRANT,
  );
  // An admin holds what the manager does not.
  assertEquals(
    await said(m.post("/api/assignments", {
      body: { roleId: narrow, userId: svc.adminAccount.id },
    })),
    OUTRANKED,
  );
  const given = await m.post("/api/assignments", {
    body: { roleId: narrow, userId: viewer.account.id },
  });
  assert(given.ok, JSON.stringify(given));
  assertEquals((await viewer.client.get("/api/users")).status, 200);
  // Only an admin makes admins.
  assertEquals(
    await said(m.patch("/api/users/{id}", {
      params: { path: { id: viewer.account.id } },
      body: { role: "admin" },
    })),
    FORBIDDEN,
  );
});

Deno.test("keys carry a subset of their minter's permissions and never exceed the minter, even after the minter loses one", async () => {
  const svc = await service();
  const adminKey = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
    body: { name: "read only", permissions: ["users:read"] },
  });
  assert(adminKey.ok, JSON.stringify(adminKey));
  assertEquals(adminKey.data.permissions, ["users:read"]);
  const readOnly = keyClient(svc, adminKey.data.key);
  assertEquals((await readOnly.get("/api/users")).status, 200);
  assertEquals(await said(readOnly.get("/api/audit")), FORBIDDEN);
  assertEquals(await dataOf(readOnly.get("/api/auth/permissions")), {
    permissions: ["users:read"],
    reach: "all",
  });
  // An admin's narrowed key is no admin: its owner holds more than it
  // does, so it mints them no key (which would hold all of theirs).
  assertEquals(
    await said(readOnly.post("/api/users/{id}/keys", {
      params: { path: { id: svc.adminAccount.id } },
      body: { name: "wider" },
    })),
    OUTRANKED,
  );
  assertEquals(
    await said(svc.admin.post("/api/users/{id}/keys", {
      params: { path: { id: svc.adminAccount.id } },
      body: { name: "bad", permissions: ["users:everything"] },
    })),
    { ok: false, status: 400, error: "Unknown permission: users:everything" },
  );

  // A delegated minter: keys for others, and users:read.
  const minter = await delegate(svc, ["keys:manage", "users:read"]);
  const owner = await delegate(svc, ["users:read"]);
  assertEquals(
    await said(minter.client.post("/api/users/{id}/keys", {
      params: { path: { id: owner.account.id } },
      body: { name: "too wide", permissions: ["users:delete"] },
    })),
    CANNOT_GRANT,
  );
  const minted = await minter.client.post("/api/users/{id}/keys", {
    params: { path: { id: owner.account.id } },
    body: { name: "reports" },
  });
  assert(minted.ok, JSON.stringify(minted));
  const reports = keyClient(svc, minted.data.key);
  assertEquals((await reports.get("/api/users")).status, 200);
  // The minter loses users:read: the key does too, at its next request,
  // though its owner still holds it.
  const narrowed = await svc.admin.patch("/api/roles/{id}", {
    params: { path: { id: minter.roleId } },
    body: { permissions: ["keys:manage"] },
  });
  assert(narrowed.ok);
  assertEquals(await said(reports.get("/api/users")), FORBIDDEN);
  assertEquals((await owner.client.get("/api/users")).status, 200);

  // A person's own key, within what they hold.
  const own = await owner.client.post("/api/users/{id}/keys", {
    params: { path: { id: owner.account.id } },
    body: { name: "mine", permissions: ["users:read"] },
  });
  assert(own.ok, JSON.stringify(own));
  assertEquals(
    await said(owner.client.post("/api/users/{id}/keys", {
      params: { path: { id: owner.account.id } },
      body: { name: "mine too", permissions: ["audit:read"] },
    })),
    CANNOT_GRANT,
  );
  // A viewer holds nothing, and still gets the 403 of before.
  const viewer = await svc.userClient("viewer");
  assertEquals(
    await said(viewer.client.post("/api/users/{id}/keys", {
      params: { path: { id: viewer.account.id } },
      body: { name: "nothing" },
    })),
    FORBIDDEN,
  );
});

Deno.test("a removed permission is refused at the next request, for a session and for a key", async () => {
  const svc = await service();
  const holder = await delegate(svc, ["users:read"]);
  const own = await holder.client.post("/api/users/{id}/keys", {
    params: { path: { id: holder.account.id } },
    body: { name: "own" },
  });
  assert(own.ok);
  const key = keyClient(svc, own.data.key);
  assertEquals((await holder.client.get("/api/users")).status, 200);
  assertEquals((await key.get("/api/users")).status, 200);
  assert(
    (await svc.admin.delete("/api/assignments/{id}", {
      params: { path: { id: holder.assignmentId } },
    })).ok,
  );
  assertEquals(await said(holder.client.get("/api/users")), FORBIDDEN);
  assertEquals(await said(key.get("/api/users")), FORBIDDEN);
  await svc.store.audit.seal();
  const records = await svc.sql<{ action: string }[]>`
    select action from audit_events
    where target_id = ${holder.account.id} and action like 'assignment.%'
    order by id`;
  assertEquals(records.map((r) => r.action), [
    "assignment.created",
    "assignment.deleted",
  ]);
});

Deno.test("step-up holds a delegated person with a second factor as it holds an admin", async () => {
  const svc = await service();
  const person = await userWithTotp(svc, "viewer");
  const roleId = await role(svc, ["users:read", "users:delete"]);
  await assign(svc, roleId, person.account.id);
  const viewer = await svc.userClient("viewer");
  await ageSecondFactor(svc, person.account.id);
  assertEquals(
    await said(person.client.delete("/api/users/{id}", {
      params: { path: { id: viewer.account.id } },
    })),
    { ok: false, status: 403, error: "Recent second factor required" },
  );
});

Deno.test({
  ...postgresOnly(
    "a removed permission is refused at the next request to another process on the same database",
  ),
  async fn() {
    await using cluster = await startCluster(2);
    const [a, b] = cluster.urls;
    const admin = createUserAdminClient({
      baseUrl: a,
      headers: { cookie: await cluster.login() },
    });
    const name = `cross ${crypto.randomUUID()}`;
    const user = await admin.post("/api/users", {
      body: {
        username: name.replace(" ", "-"),
        name,
        email: `${crypto.randomUUID()}@example.com`,
        password: "cross-password-1",
        role: "viewer",
      },
    });
    assert(user.ok);
    const created = await admin.post("/api/roles", {
      body: { name, permissions: ["users:read"] },
    });
    assert(created.ok);
    const given = await admin.post("/api/assignments", {
      body: { roleId: created.data.id, userId: user.data.id },
    });
    assert(given.ok);
    const onB = createUserAdminClient({ baseUrl: b });
    assert((await onB.login(user.data.username, "cross-password-1")).ok);
    assertEquals((await onB.get("/api/users")).status, 200);
    assert(
      (await admin.patch("/api/roles/{id}", {
        params: { path: { id: created.data.id } },
        body: { permissions: [] },
      })).ok,
    );
    assertEquals(await said(onB.get("/api/users")), FORBIDDEN);
  },
});

Deno.test("a provisioning connection takes over no person who holds a role: its token is no way round the rules above", async () => {
  const svc = await service();
  const idp = scimClient(
    svc,
    (await createConnection(svc, `Okta ${crypto.randomUUID()}`)).token,
  );
  const desk = await delegate(svc, HELP_DESK);
  const taken = await idp.patch(
    `/Users/${desk.account.id}`,
    patchOp({ op: "replace", path: "password", value: "a new long pass 1" }),
  );
  assertEquals(taken.status, 403);
  assertEquals(
    (taken.body as { detail: string }).detail,
    "User is managed elsewhere",
  );
  // Their password is still theirs.
  assert((await svc.client().login(desk.account.username, desk.password)).ok);
});
