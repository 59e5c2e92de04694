/**
 * Delegated administration, groups: the groups of /api (the same rows SCIM
 * pushes), their members, roles given to a group and held by each member
 * from their next request, no escalation through a membership. Through the
 * generated client; messages written out as docs/delegation.md states them.
 */
import type { UserAdminClient } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import {
  CANNOT_GRANT,
  dataOf,
  FORBIDDEN,
  OUTRANKED,
  said,
} from "./delegation_support.ts";
import { sharedService, type TestService } from "./support/service.ts";
import { createConnection, patchOp, scimClient } from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

const PROVIDER_OWNED = {
  ok: false,
  status: 409,
  error: "Group is managed by its identity provider: change it there",
};
const GROUP_NOT_FOUND = { ok: false, status: 404, error: "Group not found" };

async function role(svc: TestService, permissions: string[]) {
  return (await dataOf(svc.admin.post("/api/roles", {
    body: { name: `group role ${crypto.randomUUID()}`, permissions },
  }))).id;
}

async function group(svc: TestService, by: UserAdminClient = svc.admin) {
  return await dataOf(by.post("/api/groups", {
    body: { displayName: `Desk ${crypto.randomUUID()}` },
  }));
}

const path = (id: number) => ({ params: { path: { id } } });

async function records(svc: TestService, action: string, groupId: number) {
  await svc.store.audit.seal();
  return await svc.sql<
    { actorId: number | null; details: Record<string, unknown> }[]
  >`
    select actor_id as "actorId", details from audit_events
    where action = ${action} and details->>'groupId' = ${String(groupId)}
    order by id`;
}

Deno.test("groups: create, read, rename, members replaced, added and removed, delete; each recorded", async () => {
  const svc = await service();
  const a = await svc.userClient("viewer");
  const b = await svc.userClient("viewer");
  const made = await group(svc);
  assertEquals(
    [made.externalId, made.connectionId, made.members],
    [null, null, []],
  );
  assertEquals(
    await dataOf(svc.admin.get("/api/groups/{id}", path(made.id))),
    made,
  );
  assert(
    (await dataOf(svc.admin.get("/api/groups"))).some((g) => g.id === made.id),
  );

  const renamed = await dataOf(svc.admin.patch("/api/groups/{id}", {
    ...path(made.id),
    body: { displayName: "  Help desk  ", externalId: "ext-1" },
  }));
  assertEquals([renamed.displayName, renamed.externalId], [
    "Help desk",
    "ext-1",
  ]);

  const both = await dataOf(svc.admin.put("/api/groups/{id}/members", {
    ...path(made.id),
    body: { userIds: [b.account.id, a.account.id] },
  }));
  assertEquals(
    both.members,
    [a.account, b.account].map(({ id, username }) => ({ id, username }))
      .sort((x, y) => x.id - y.id),
  );
  const one = await dataOf(svc.admin.delete("/api/groups/{id}/members", {
    ...path(made.id),
    body: { userIds: [a.account.id] },
  }));
  assertEquals(one.members.map((m) => m.id), [b.account.id]);
  const again = await dataOf(svc.admin.post("/api/groups/{id}/members", {
    ...path(made.id),
    body: { userIds: [a.account.id, b.account.id] },
  }));
  assertEquals(again.members.length, 2);

  assertEquals(
    await said(svc.admin.post("/api/groups/{id}/members", {
      ...path(made.id),
      body: { userIds: [2_000_000_000] },
    })),
    { ok: false, status: 404, error: "User not found" },
  );
  assertEquals(
    await said(svc.admin.post("/api/groups", { body: { displayName: " " } })),
    { ok: false, status: 400, error: "Invalid request body" },
  );
  assertEquals(
    await said(svc.admin.get("/api/groups/{id}", path(2_000_000_000))),
    GROUP_NOT_FOUND,
  );

  assert((await svc.admin.delete("/api/groups/{id}", path(made.id))).ok);
  assertEquals(
    await said(svc.admin.get("/api/groups/{id}", path(made.id))),
    GROUP_NOT_FOUND,
  );

  assertEquals((await records(svc, "group.created", made.id)).length, 1);
  assertEquals(
    (await records(svc, "group.updated", made.id)).map((r) =>
      r.details.changed
    ),
    [["displayName", "externalId"]],
  );
  assertEquals(
    (await records(svc, "group.members_changed", made.id)).map((r) => [
      r.details.added,
      r.details.removed,
    ]),
    [
      [[a.account.id, b.account.id].sort((x, y) => x - y), []],
      [[], [a.account.id]],
      [[a.account.id], []],
    ],
  );
  const [deleted] = await records(svc, "group.deleted", made.id);
  assertEquals(deleted.actorId, svc.adminAccount.id);
});

Deno.test("groups need roles:manage: a viewer and a help desk get 403", async () => {
  const svc = await service();
  const viewer = await svc.userClient("viewer");
  assertEquals(await said(viewer.client.get("/api/groups")), FORBIDDEN);
  const desk = await svc.userClient("viewer");
  const roleId = await role(svc, ["users:read"]);
  await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, userId: desk.account.id },
  }));
  assertEquals(
    await said(desk.client.post("/api/groups", {
      body: { displayName: "Mine" },
    })),
    FORBIDDEN,
  );
});

Deno.test("a role given to a group is held by each member, and stops at the next request when the membership, the assignment or the group goes", async () => {
  const svc = await service();
  const member = await svc.userClient("viewer");
  const c = member.client;
  const roleId = await role(svc, ["users:read"]);

  // Membership goes.
  const g1 = await group(svc);
  const a1 = await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, groupId: g1.id },
  }));
  assertEquals([a1.groupId, a1.userId, a1.roleId], [g1.id, undefined, roleId]);
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);
  await dataOf(svc.admin.post("/api/groups/{id}/members", {
    ...path(g1.id),
    body: { userIds: [member.account.id] },
  }));
  assertEquals((await c.get("/api/users")).status, 200);
  assertEquals(await dataOf(c.get("/api/auth/permissions")), {
    permissions: ["users:read"],
    reach: "all",
  });
  await dataOf(svc.admin.delete("/api/groups/{id}/members", {
    ...path(g1.id),
    body: { userIds: [member.account.id] },
  }));
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);

  // The assignment goes.
  await dataOf(svc.admin.put("/api/groups/{id}/members", {
    ...path(g1.id),
    body: { userIds: [member.account.id] },
  }));
  assertEquals((await c.get("/api/users")).status, 200);
  assertEquals(
    (await dataOf(svc.admin.get("/api/assignments", {
      params: { query: { groupId: g1.id } },
    }))).map((a) => a.id),
    [a1.id],
  );
  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: { roleId, groupId: g1.id },
    })),
    { ok: false, status: 409, error: "Assignment already exists" },
  );
  assert(
    (await svc.admin.delete("/api/assignments/{id}", path(a1.id))).ok,
  );
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);

  // The group goes: its assignment ends with it, recorded.
  const a2 = await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, groupId: g1.id },
  }));
  assertEquals((await c.get("/api/users")).status, 200);
  assert((await svc.admin.delete("/api/groups/{id}", path(g1.id))).ok);
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);
  assertEquals(
    await said(svc.admin.delete("/api/assignments/{id}", path(a2.id))),
    { ok: false, status: 404, error: "Assignment not found" },
  );
  const ended = (await records(svc, "assignment.deleted", g1.id)).map((r) =>
    r.details
  );
  assertEquals(ended.map((d) => [d.assignmentId, d.reason]), [
    [a1.id, undefined],
    [a2.id, "group deleted"],
  ]);

  assertEquals(
    await said(svc.admin.post("/api/assignments", {
      body: { roleId, groupId: g1.id },
    })),
    GROUP_NOT_FOUND,
  );
  for (
    const body of [
      { roleId },
      { roleId, userId: member.account.id, groupId: g1.id },
    ]
  ) {
    assertEquals(
      await said(svc.admin.post("/api/assignments", { body })),
      { ok: false, status: 400, error: "Invalid assignment" },
    );
  }

  // The role goes: a group's assignment ends with it too.
  const g2 = await group(svc);
  await dataOf(svc.admin.post("/api/groups/{id}/members", {
    ...path(g2.id),
    body: { userIds: [member.account.id] },
  }));
  await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, groupId: g2.id },
  }));
  assertEquals((await c.get("/api/users")).status, 200);
  assert((await svc.admin.delete("/api/roles/{id}", path(roleId))).ok);
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);
});

Deno.test("no escalation through a group: adding members to a group that grants what the caller does not hold is 403", async () => {
  const svc = await service();
  const manager = await svc.userClient("viewer");
  const managerRole = await role(svc, ["roles:manage", "users:read"]);
  await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId: managerRole, userId: manager.account.id },
  }));
  const m = manager.client;
  const target = await svc.userClient("viewer");
  const strong = await role(svc, ["users:read", "users:delete"]);
  const weak = await role(svc, ["users:read"]);

  const g = await group(svc, m);
  // Giving the group a role beyond the manager: refused, as for a user.
  assertEquals(
    await said(m.post("/api/assignments", {
      body: { roleId: strong, groupId: g.id },
    })),
    CANNOT_GRANT,
  );
  assert(
    (await m.post("/api/assignments", {
      body: { roleId: weak, groupId: g.id },
    }))
      .ok,
  );
  // Within what they hold, members come and go.
  assert(
    (await m.post("/api/groups/{id}/members", {
      ...path(g.id),
      body: { userIds: [target.account.id] },
    })).ok,
  );
  // Once the group grants more than the manager holds, adding is refused.
  await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId: strong, groupId: g.id },
  }));
  const other = await svc.userClient("viewer");
  for (
    const answer of [
      m.post("/api/groups/{id}/members", {
        ...path(g.id),
        body: { userIds: [other.account.id] },
      }),
      m.put("/api/groups/{id}/members", {
        ...path(g.id),
        body: { userIds: [target.account.id, other.account.id] },
      }),
    ]
  ) assertEquals(await said(answer), CANNOT_GRANT);
  assertEquals(
    (await dataOf(svc.admin.get("/api/groups/{id}", path(g.id)))).members.map(
      (x) => x.id,
    ),
    [target.account.id],
  );
  assertEquals(await said(other.client.get("/api/users")), FORBIDDEN);
  // Nor does the manager move anyone who holds more than they do.
  const plain = await group(svc, m);
  for (
    const answer of [
      m.post("/api/groups/{id}/members", {
        ...path(plain.id),
        body: { userIds: [svc.adminAccount.id] },
      }),
      m.delete("/api/groups/{id}/members", {
        ...path(g.id),
        body: { userIds: [target.account.id] },
      }),
    ]
  ) assertEquals(await said(answer), OUTRANKED);
  // An admin may.
  assert(
    (await svc.admin.post("/api/groups/{id}/members", {
      ...path(g.id),
      body: { userIds: [other.account.id] },
    })).ok,
  );
  assertEquals((await other.client.get("/api/users")).status, 200);
});

Deno.test("a group SCIM pushes grants a role to its members, is read-only in /api while its connection lives, and its deletion ends its assignments", async () => {
  const svc = await service();
  const conn = await createConnection(svc, `Okta ${crypto.randomUUID()}`);
  const idp = scimClient(svc, conn.token);
  const member = await svc.userClient("viewer");
  const pushed = await idp.post("/Groups", {
    displayName: `Readers ${crypto.randomUUID()}`,
    members: [],
  });
  assertEquals(pushed.status, 201);
  const id = Number(pushed.body.id);
  const shown = await dataOf(svc.admin.get("/api/groups/{id}", path(id)));
  assertEquals([shown.connectionId, shown.members], [conn.id, []]);

  const roleId = await role(svc, ["users:read"]);
  const assignment = await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, groupId: id },
  }));
  assertEquals(await said(member.client.get("/api/users")), FORBIDDEN);
  const joined = await idp.patch(
    `/Groups/${id}`,
    patchOp({
      op: "add",
      path: "members",
      value: [{ value: String(member.account.id) }],
    }),
  );
  assert(
    joined.status === 200 || joined.status === 204,
    JSON.stringify(joined),
  );
  assertEquals((await member.client.get("/api/users")).status, 200);

  // The identity provider's group changes there only.
  assertEquals(
    await said(svc.admin.patch("/api/groups/{id}", {
      ...path(id),
      body: { displayName: "Mine now" },
    })),
    PROVIDER_OWNED,
  );
  assertEquals(
    await said(svc.admin.delete("/api/groups/{id}/members", {
      ...path(id),
      body: { userIds: [member.account.id] },
    })),
    PROVIDER_OWNED,
  );
  assertEquals(
    await said(svc.admin.delete("/api/groups/{id}", path(id))),
    PROVIDER_OWNED,
  );

  assertEquals((await idp.delete(`/Groups/${id}`)).status, 204);
  assertEquals(await said(member.client.get("/api/users")), FORBIDDEN);
  // Once its connection is deleted, nothing overwrites its groups: /api may change them.
  const left = await idp.post("/Groups", {
    displayName: `Left ${crypto.randomUUID()}`,
    members: [],
  });
  assertEquals(left.status, 201);
  const leftId = Number(left.body.id);
  assert(
    (await svc.admin.DELETE("/api/scim/connections/{id}", path(conn.id)))
      .response.ok,
  );
  assertEquals(
    (await dataOf(svc.admin.patch("/api/groups/{id}", {
      ...path(leftId),
      body: { displayName: "Kept here" },
    }))).displayName,
    "Kept here",
  );
  const [ended] = await records(svc, "assignment.deleted", id);
  assertEquals(
    [ended.actorId, ended.details.assignmentId, ended.details.reason],
    [null, assignment.id, "group deleted"],
  );
});
