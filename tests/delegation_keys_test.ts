/**
 * Delegated administration, a key limited to a group's members
 * (`reachGroupId`): it sees and changes those members only, for every
 * permission it carries (every other user answers 404 `User not found` and
 * is absent from lists, searches, exports, counts and audit reads); it is
 * minted only over a group its minter reaches with each permission it
 * carries; deleting the group ends it. Through the generated client;
 * messages written out as docs/delegation.md states them.
 */
import type { UserAdminClient } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { keyClient } from "./support/api-keys.ts";
import { CANNOT_GRANT, dataOf, FORBIDDEN, said } from "./delegation_support.ts";
import { sharedService, type TestService } from "./support/service.ts";
import { createConnection, scimClient } from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

const NOT_FOUND = { ok: false, status: 404, error: "User not found" };
const UNAUTHORISED = { ok: false, status: 401, error: "Unauthorised" };

const path = (id: number) => ({ params: { path: { id } } });

/** The permissions that act on users, in the catalogue's order. */
const ON_USERS = [
  "users:read",
  "users:update",
  "users:password",
  "users:disable",
  "users:sessions",
  "users:factors",
  "users:delete",
  "users:export",
  "audit:read",
  "keys:manage",
];

async function group(svc: TestService, userIds: number[] = []) {
  const made = await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: `Team ${crypto.randomUUID()}` },
  }));
  if (userIds.length > 0) {
    assert(
      (await svc.admin.post("/api/groups/{id}/members", {
        ...path(made.id),
        body: { userIds },
      })).ok,
    );
  }
  return made.id;
}

/** Gives `userId` a new role of these permissions, over everyone or over a group. */
async function assign(
  svc: TestService,
  userId: number,
  permissions: string[],
  reachGroupId?: number,
) {
  const role = await dataOf(svc.admin.post("/api/roles", {
    body: { name: `key role ${crypto.randomUUID()}`, permissions },
  }));
  assert(
    (await svc.admin.post("/api/assignments", {
      body: { roleId: role.id, userId, ...reachGroupId && { reachGroupId } },
    })).ok,
  );
}

/** Mints a key for `userId` as `by`; the whole answer. */
const mint = (
  by: UserAdminClient,
  userId: number,
  body: {
    permissions?: string[];
    reachGroupId?: number | null;
  } = {},
) =>
  by.post("/api/users/{id}/keys", {
    ...path(userId),
    body: { name: `key ${crypto.randomUUID()}`, ...body },
  });

/** A team of two members, beside one user outside it. */
async function team(svc: TestService) {
  const inside = await svc.userClient("viewer");
  const also = await svc.userClient("viewer");
  const outside = await svc.userClient("viewer");
  const g = await group(svc, [inside.account.id, also.account.id]);
  return { inside, also, outside, g };
}

const ids = (users: { id: number }[]) => users.map((u) => u.id).sort();

Deno.test("a key limited to a group sees and changes its members only, for every permission it carries", async () => {
  const svc = await service();
  const { inside, also, outside, g } = await team(svc);
  const o = outside.account.id;
  const members = ids([inside.account, also.account]);

  // The first admin's own key, limited to the team: what it carries is
  // the admin's every permission that acts on users, over the team only.
  const minted = await dataOf(mint(svc.admin, svc.adminAccount.id, {
    reachGroupId: g,
  }));
  assertEquals(minted.reachGroupId, g);
  const listed = await dataOf(
    svc.admin.get("/api/users/{id}/keys", path(svc.adminAccount.id)),
  );
  assertEquals(listed.find((k) => k.id === minted.id)?.reachGroupId, g);
  const unlimited = await dataOf(mint(svc.admin, svc.adminAccount.id));
  assertEquals(unlimited.reachGroupId, null);

  const c = keyClient(svc, minted.key);
  assertEquals<unknown>(await dataOf(c.get("/api/auth/permissions")), {
    permissions: ON_USERS,
    reach: { groupIds: [g] },
  });

  // Lists, searches, pages, detail, count, export.
  assertEquals(ids(await dataOf(c.get("/api/users"))), members);
  assertEquals(
    await dataOf(c.get("/api/users", {
      params: { query: { q: outside.account.username } },
    })),
    [],
  );
  assertEquals(
    (await dataOf(c.get("/api/users", { params: { query: { limit: 1 } } })))
      .length,
    1,
  );
  assertEquals(
    (await dataOf(c.get("/api/users/{id}", path(inside.account.id)))).id,
    inside.account.id,
  );
  assertEquals(await said(c.get("/api/users/{id}", path(o))), NOT_FOUND);
  // The key's own owner is no member: not there either.
  assertEquals(
    await said(c.get("/api/users/{id}", path(svc.adminAccount.id))),
    NOT_FOUND,
  );
  assertEquals(await dataOf(c.get("/api/users/count")), {
    count: 2,
    exact: true,
  });
  const exported = await c.GET("/api/users/export", { parseAs: "text" });
  assertEquals(
    (exported.data as string).split("\n").filter((l) => l)
      .map((l) => JSON.parse(l).id).sort(),
    members,
  );

  // Every write on someone else: not there.
  assertEquals(
    await said(c.patch("/api/users/{id}", {
      ...path(o),
      body: { name: "Nope" },
    })),
    NOT_FOUND,
  );
  assertEquals(
    await said(c.patch("/api/users/{id}", {
      ...path(o),
      body: { password: "a-new-password-1" },
    })),
    NOT_FOUND,
  );
  assertEquals(
    await said(c.post("/api/users/{id}/disable", path(o))),
    NOT_FOUND,
  );
  assertEquals(
    await said(c.delete("/api/users/{id}/sessions", path(o))),
    NOT_FOUND,
  );
  assertEquals(await said(c.delete("/api/users/{id}/mfa", path(o))), NOT_FOUND);
  assertEquals(await said(mint(c, o)), NOT_FOUND);
  assertEquals(await said(c.delete("/api/users/{id}", path(o))), NOT_FOUND);
  const [{ name, exists }] = await svc.sql<
    { name: string; exists: boolean }[]
  >`
    select name, true as exists from users where id = ${o}`;
  assert(exists && name !== "Nope");

  // On a member, each of them works.
  assertEquals(
    (await dataOf(c.patch("/api/users/{id}", {
      ...path(inside.account.id),
      body: { name: "Changed By Key", password: "a-new-password-1" },
    }))).name,
    "Changed By Key",
  );
  assert((await c.post("/api/users/{id}/disable", path(also.account.id))).ok);
  assert((await c.post("/api/users/{id}/enable", path(also.account.id))).ok);
  assert(
    (await c.delete("/api/users/{id}/sessions", path(also.account.id))).ok,
  );

  // What acts on no one user is not carried, and no admin acts through it.
  assertEquals(await said(c.get("/api/webhooks")), FORBIDDEN);
  assertEquals(await said(c.get("/api/roles")), FORBIDDEN);
  assertEquals(
    await said(c.post("/api/users", {
      body: {
        username: `made-${crypto.randomUUID().slice(0, 8)}`,
        name: "Made",
        email: `made-${crypto.randomUUID().slice(0, 8)}@example.com`,
        password: "a-new-password-1",
        role: "viewer",
      },
    })),
    FORBIDDEN,
  );

  // The trail: records about a member only.
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path(o),
      body: { name: "Outside Renamed" },
    })).ok,
  );
  await svc.store.audit.seal();
  const trail = await dataOf(
    c.get("/api/audit", { params: { query: { limit: 100 } } }),
  );
  assert(trail.some((r) => r.target?.id === inside.account.id));
  assert(
    trail.every((r) => r.target !== null && members.includes(r.target.id)),
    JSON.stringify(trail),
  );

  // The same owner's unlimited key reaches everyone.
  const wide = keyClient(svc, unlimited.key);
  assertEquals((await dataOf(wide.get("/api/users/{id}", path(o)))).id, o);
});

Deno.test("a key is limited to a group its owner and minter reach: the intersection, at every request", async () => {
  const svc = await service();
  const { inside, also, outside, g } = await team(svc);
  // A lead who reads the team, and changes names over everyone.
  const lead = await svc.userClient("viewer");
  await assign(svc, lead.account.id, ["users:read"], g);
  await assign(svc, lead.account.id, ["users:update"]);
  const own = keyClient(
    svc,
    (await dataOf(mint(lead.client, lead.account.id, { reachGroupId: g })))
      .key,
  );
  assertEquals<unknown>(await dataOf(own.get("/api/auth/permissions")), {
    permissions: ["users:read", "users:update"],
    reach: { groupIds: [g] },
  });
  assertEquals(
    ids(await dataOf(own.get("/api/users"))),
    ids([inside.account, also.account]),
  );
  assertEquals(
    await said(own.patch("/api/users/{id}", {
      ...path(outside.account.id),
      body: { name: "Nope" },
    })),
    NOT_FOUND,
  );

  // A member who leaves is out of the key's reach from its next request.
  assert(
    (await svc.admin.delete("/api/groups/{id}/members", {
      ...path(g),
      body: { userIds: [also.account.id] },
    })).ok,
  );
  assertEquals(
    await said(own.get("/api/users/{id}", path(also.account.id))),
    NOT_FOUND,
  );
  assertEquals(ids(await dataOf(own.get("/api/users"))), [inside.account.id]);
});

Deno.test("minting a key limited to a group: only within the minter's reach for each permission it carries; an unknown group is 400", async () => {
  const svc = await service();
  const { inside, g } = await team(svc);
  const other = await group(svc);
  const lead = await svc.userClient("viewer");
  // users:read and keys:manage over the team; users:update over everyone.
  await assign(svc, lead.account.id, ["users:read", "keys:manage"], g);
  await assign(svc, lead.account.id, ["users:update"]);
  const me = lead.account.id;

  // Over another group: each of the lead's held over the team only is refused.
  assertEquals(
    await said(mint(lead.client, me, { reachGroupId: other })),
    CANNOT_GRANT,
  );
  assertEquals(
    await said(mint(lead.client, me, {
      permissions: ["users:read"],
      reachGroupId: other,
    })),
    CANNOT_GRANT,
  );
  assertEquals(
    await said(mint(lead.client, inside.account.id, {
      permissions: ["users:read"],
      reachGroupId: other,
    })),
    CANNOT_GRANT,
  );
  // One held over everyone reaches the other group too.
  assertEquals(
    (await dataOf(mint(lead.client, me, {
      permissions: ["users:update"],
      reachGroupId: other,
    }))).reachGroupId,
    other,
  );
  // Over the team: everything the lead holds reaches it.
  assertEquals(
    (await dataOf(mint(lead.client, me, { reachGroupId: g }))).reachGroupId,
    g,
  );
  assertEquals(
    (await dataOf(mint(lead.client, inside.account.id, {
      permissions: ["users:read"],
      reachGroupId: g,
    }))).reachGroupId,
    g,
  );

  // An unknown group, and a body that is not a group's id.
  assertEquals(
    await said(mint(svc.admin, svc.adminAccount.id, {
      reachGroupId: 2_000_000_000,
    })),
    { ok: false, status: 400, error: "Group not found" },
  );
  for (const reachGroupId of [0, -1, 1.5, "5"]) {
    assertEquals(
      await said(mint(svc.admin, svc.adminAccount.id, {
        reachGroupId: reachGroupId as number,
      })),
      { ok: false, status: 400, error: "Invalid API key request" },
    );
  }
  // Null is no limit.
  assertEquals(
    (await dataOf(mint(svc.admin, svc.adminAccount.id, {
      reachGroupId: null,
    }))).reachGroupId,
    null,
  );
});

Deno.test("deleting the group revokes the keys limited to it, recorded; a group gone another way leaves them reaching no one", async () => {
  const svc = await service();
  const { inside, g } = await team(svc);
  const owner = await svc.userClient("viewer");
  await assign(svc, owner.account.id, ["users:read"]);
  const limited = await dataOf(
    mint(svc.admin, owner.account.id, { reachGroupId: g }),
  );
  const wide = await dataOf(mint(svc.admin, owner.account.id));
  const c = keyClient(svc, limited.key);
  assertEquals(ids(await dataOf(c.get("/api/users"))).length, 2);

  assert((await svc.admin.delete("/api/groups/{id}", path(g))).ok);
  assertEquals(await said(c.get("/api/users")), UNAUTHORISED);
  assertEquals(
    (await dataOf(
      svc.admin.get("/api/users/{id}/keys", path(owner.account.id)),
    )).map((k) => k.id),
    [wide.id],
  );
  // The owner's other key is not the group's.
  assert((await keyClient(svc, wide.key).get("/api/users")).ok);
  await svc.store.audit.seal();
  const revoked = (await dataOf(svc.admin.get("/api/audit", {
    params: { query: { action: "key.revoked", limit: 100 } },
  }))).filter((r) => r.details.keyId === limited.id);
  assertEquals(
    revoked.map((r) => [r.actor?.id, r.target?.id, r.details]),
    [[svc.adminAccount.id, owner.account.id, {
      keyId: limited.id,
      name: limited.name,
      reason: "group deleted",
    }]],
  );

  // A group deleted without that revocation (as a release without it
  // does): its key acts on no one.
  const h = await group(svc, [inside.account.id]);
  const stray = keyClient(
    svc,
    (await dataOf(mint(svc.admin, owner.account.id, { reachGroupId: h })))
      .key,
  );
  assertEquals(ids(await dataOf(stray.get("/api/users"))), [inside.account.id]);
  await svc.sql`delete from scim_members where group_id = ${h}`;
  await svc.sql`delete from scim_groups where id = ${h}`;
  assertEquals(await dataOf(stray.get("/api/users")), []);
  assertEquals(
    await said(stray.get("/api/users/{id}", path(inside.account.id))),
    NOT_FOUND,
  );
});

Deno.test("a group its identity provider deletes revokes the keys limited to it, recorded with no actor", async () => {
  const svc = await service();
  const conn = await createConnection(svc, `Okta ${crypto.randomUUID()}`);
  const idp = scimClient(svc, conn.token);
  const member = await svc.userClient("viewer");
  const pushed = await idp.post("/Groups", {
    displayName: `Pushed ${crypto.randomUUID()}`,
    members: [{ value: String(member.account.id) }],
  });
  assertEquals(pushed.status, 201);
  const id = Number(pushed.body.id);
  const minted = await dataOf(
    mint(svc.admin, svc.adminAccount.id, { reachGroupId: id }),
  );
  const c = keyClient(svc, minted.key);
  assertEquals(ids(await dataOf(c.get("/api/users"))), [member.account.id]);

  assertEquals((await idp.delete(`/Groups/${id}`)).status, 204);
  assertEquals(await said(c.get("/api/users")), UNAUTHORISED);
  await svc.store.audit.seal();
  const revoked = (await dataOf(svc.admin.get("/api/audit", {
    params: { query: { action: "key.revoked", limit: 100 } },
  }))).filter((r) => r.details.keyId === minted.id);
  assertEquals(
    revoked.map((r) => [r.actor, r.target?.id, r.details.reason]),
    [[null, svc.adminAccount.id, "group deleted"]],
  );
});
