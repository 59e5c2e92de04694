/**
 * Delegated administration, reach: an assignment limited to a group's
 * members (`reachGroupId`). Its holder sees and changes those members only
 * (every other user answers 404 `User not found` and is absent from lists,
 * searches, exports and audit reads), loses a member who leaves at the next
 * request, and grants nothing over a reach wider than theirs. Through the
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

const service = sharedService({}, { bcryptCost: 4 });

const NOT_FOUND = { ok: false, status: 404, error: "User not found" };

async function role(svc: TestService, permissions: string[]) {
  return (await dataOf(svc.admin.post("/api/roles", {
    body: { name: `reach role ${crypto.randomUUID()}`, permissions },
  }))).id;
}

async function group(svc: TestService, userIds: number[] = []) {
  const made = await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: `Region ${crypto.randomUUID()}` },
  }));
  if (userIds.length > 0) await members(svc.admin, made.id, "post", userIds);
  return made.id;
}

const members = (
  by: UserAdminClient,
  id: number,
  how: "post" | "delete",
  userIds: number[],
) =>
  how === "post"
    ? by.post("/api/groups/{id}/members", { ...path(id), body: { userIds } })
    : by.delete("/api/groups/{id}/members", {
      ...path(id),
      body: { userIds },
    });

const path = (id: number) => ({ params: { path: { id } } });

const LEAD = [
  "users:read",
  "users:update",
  "users:password",
  "users:disable",
  "users:delete",
  "users:export",
  "audit:read",
];

/** A regional lead over a new group of two members, beside one user outside it. */
async function region(svc: TestService, permissions = LEAD) {
  const inside = await svc.userClient("viewer");
  const also = await svc.userClient("viewer");
  const outside = await svc.userClient("viewer");
  const lead = await svc.userClient("viewer");
  const g = await group(svc, [inside.account.id, also.account.id]);
  const assignment = await dataOf(svc.admin.post("/api/assignments", {
    body: {
      roleId: await role(svc, permissions),
      userId: lead.account.id,
      reachGroupId: g,
    },
  }));
  return { inside, also, outside, lead, g, assignment };
}

const ids = (users: { id: number }[]) => users.map((u) => u.id).sort();

Deno.test("a lead limited to a group sees its members only: list, search, detail, export, audit", async () => {
  const svc = await service();
  const { inside, also, outside, lead, g, assignment } = await region(svc);
  assertEquals(assignment.reachGroupId, g);
  const c = lead.client;

  assertEquals(
    ids(await dataOf(c.get("/api/users"))),
    ids([inside.account, also.account]),
  );
  // Paged, and searched: still the members only.
  const page = await dataOf(
    c.get("/api/users", { params: { query: { limit: 1 } } }),
  );
  assertEquals(page.length, 1);
  assertEquals(
    await dataOf(c.get("/api/users", {
      params: { query: { q: outside.account.username } },
    })),
    [],
  );
  assertEquals(
    ids(
      await dataOf(c.get("/api/users", {
        params: { query: { q: inside.account.username } },
      })),
    ),
    [inside.account.id],
  );
  assertEquals(
    (await dataOf(c.get("/api/users/{id}", path(inside.account.id)))).id,
    inside.account.id,
  );
  assertEquals(
    await said(c.get("/api/users/{id}", path(outside.account.id))),
    NOT_FOUND,
  );
  // An admin still reads everyone.
  assert(
    (await dataOf(svc.admin.get("/api/users"))).some((u) =>
      u.id === outside.account.id
    ),
  );

  const exported = await c.GET("/api/users/export", { parseAs: "text" });
  const lines = (exported.data as string).split("\n").filter((l) => l);
  assertEquals(
    lines.map((l) => JSON.parse(l).id).sort(),
    ids([inside.account, also.account]),
  );

  // Records about a member are read; about anyone else, not.
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path(inside.account.id),
      body: { name: "Inside Renamed" },
    })).ok,
  );
  assert(
    (await svc.admin.patch("/api/users/{id}", {
      ...path(outside.account.id),
      body: { name: "Outside Renamed" },
    })).ok,
  );
  await svc.store.audit.seal();
  const trail = await dataOf(
    c.get("/api/audit", { params: { query: { limit: 100 } } }),
  );
  assert(trail.length > 0);
  assert(
    trail.every((r) =>
      r.target !== null &&
      [inside.account.id, also.account.id].includes(r.target.id)
    ),
    JSON.stringify(trail),
  );
  assert(trail.some((r) => r.target?.id === inside.account.id));

  assertEquals<unknown>(await dataOf(c.get("/api/auth/permissions")), {
    permissions: LEAD,
    reach: { groupIds: [g] },
  });

  // The count and the overview count the members only.
  assertEquals(await dataOf(c.get("/api/users/count")), {
    count: 2,
    exact: true,
  });
  const overview = await dataOf(c.get("/api/overview"));
  assertEquals(overview.users, {
    total: 2,
    admins: 0,
    disabled: 0,
    unenrolledAdmins: 0,
  });
  const everyone = await dataOf(svc.admin.get("/api/overview"));
  assert(everyone.users.total > 2, JSON.stringify(everyone.users));
  const signedIn = (o: typeof overview) =>
    (o.signIns ?? []).reduce((n, d) => n + d.succeeded, 0);
  assert(signedIn(overview) > 0 && signedIn(overview) < signedIn(everyone));
});

Deno.test("a lead limited to a group acts on its members; anyone else is not there", async () => {
  const svc = await service();
  const { inside, outside, lead } = await region(svc);
  const c = lead.client;
  const o = outside.account.id;

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
    await said(c.delete("/api/users/{id}", path(o))),
    NOT_FOUND,
  );
  // Without users:sessions, the route's 403 comes first.
  assertEquals(
    await said(c.delete("/api/users/{id}/sessions", path(o))),
    FORBIDDEN,
  );
  const [{ name }] = await svc.sql<{ name: string }[]>`
    select name from users where id = ${o}`;
  assert(name !== "Nope");

  assertEquals(
    (await dataOf(c.patch("/api/users/{id}", {
      ...path(inside.account.id),
      body: { name: "Changed By Lead", password: "a-new-password-1" },
    }))).name,
    "Changed By Lead",
  );
  assert((await c.post("/api/users/{id}/disable", path(inside.account.id))).ok);
  assert((await c.post("/api/users/{id}/enable", path(inside.account.id))).ok);
  assert((await c.delete("/api/users/{id}", path(inside.account.id))).ok);
});

Deno.test("out of reach from the next request: a member who leaves, an assignment ended, a group deleted", async () => {
  const svc = await service();
  const { inside, also, lead, g, assignment } = await region(svc);
  const c = lead.client;
  assert((await c.get("/api/users/{id}", path(inside.account.id))).ok);

  const before = await c.GET("/api/users");
  const tag = before.response.headers.get("etag")!;
  assert((await members(svc.admin, g, "delete", [inside.account.id])).ok);
  assertEquals(
    await said(c.get("/api/users/{id}", path(inside.account.id))),
    NOT_FOUND,
  );
  assertEquals(
    await said(c.patch("/api/users/{id}", {
      ...path(inside.account.id),
      body: { name: "Too Late" },
    })),
    NOT_FOUND,
  );
  // The list's tag moved with the membership: the old one validates nothing.
  const after = await c.GET("/api/users", {
    headers: { "If-None-Match": tag },
  });
  assertEquals(after.response.status, 200);
  assertEquals(ids(after.data!), [also.account.id]);

  assert(
    (await svc.admin.delete("/api/assignments/{id}", path(assignment.id))).ok,
  );
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);

  // A group deleted ends the assignments limited to it, recorded.
  const again = await dataOf(svc.admin.post("/api/assignments", {
    body: {
      roleId: assignment.roleId,
      userId: lead.account.id,
      reachGroupId: g,
    },
  }));
  assert((await c.get("/api/users")).ok);
  assert((await svc.admin.delete("/api/groups/{id}", path(g))).ok);
  assertEquals(await said(c.get("/api/users")), FORBIDDEN);
  await svc.store.audit.seal();
  const [ended] = await svc.sql<{ details: Record<string, unknown> }[]>`
    select details from audit_events where action = 'assignment.deleted'
      and details->>'assignmentId' = ${String(again.id)}`;
  assertEquals(
    [ended.details.reason, ended.details.reachGroupId],
    ["group deleted", g],
  );
});

Deno.test("no escalation with reach: wider assignments, memberships that widen, users who reach further", async () => {
  const svc = await service();
  const { inside, outside, lead, g } = await region(svc, ["users:read"]);
  // The lead also manages roles (over everyone: the only way it is held).
  assert(
    (await svc.admin.post("/api/assignments", {
      body: {
        roleId: await role(svc, ["roles:manage"]),
        userId: lead.account.id,
      },
    })).ok,
  );
  const c = lead.client;
  assertEquals<unknown>(await dataOf(c.get("/api/auth/permissions")), {
    permissions: ["users:read", "roles:manage"],
    reach: "mixed",
    reaches: { "users:read": { groupIds: [g] }, "roles:manage": "all" },
  });
  const reader = await role(svc, ["users:read"]);
  const other = await group(svc);
  const someone = await svc.userClient("viewer");
  const grant = (body: Record<string, number>) =>
    said(c.post("/api/assignments", { body: { roleId: reader, ...body } }));

  // Over everyone, or over another group: wider than the lead's.
  assertEquals(await grant({ userId: someone.account.id }), CANNOT_GRANT);
  assertEquals(
    await grant({ userId: someone.account.id, reachGroupId: other }),
    CANNOT_GRANT,
  );
  assertEquals(
    await grant({ groupId: other, reachGroupId: other }),
    CANNOT_GRANT,
  );
  assertEquals(
    await grant({ userId: someone.account.id, reachGroupId: 2_000_000_000 }),
    { ok: false, status: 404, error: "Group not found" },
  );
  // Over the lead's own group: within.
  const given = await dataOf(c.post("/api/assignments", {
    body: { roleId: reader, userId: someone.account.id, reachGroupId: g },
  }));
  assertEquals(given.reachGroupId, g);
  assertEquals(
    (await dataOf(
      svc.admin.get("/api/assignments", {
        params: { query: { userId: someone.account.id } },
      }),
    )).map((a) => a.reachGroupId),
    [g],
  );

  // Adding a user to G widens `someone`'s reach to them: the lead must
  // reach that user already.
  assertEquals(
    await said(members(c, g, "post", [outside.account.id])),
    CANNOT_GRANT,
  );
  assert((await members(svc.admin, other, "post", [outside.account.id])).ok);
  assertEquals(
    await said(members(c, g, "post", [outside.account.id])),
    CANNOT_GRANT,
  );

  // Widening a role that someone holds over everyone to a permission the
  // lead holds over G only is refused; one held over G, allowed.
  const empty = await role(svc, []);
  assert(
    (await svc.admin.post("/api/assignments", {
      body: { roleId: empty, userId: someone.account.id },
    })).ok,
  );
  const widen = (id: number) =>
    said(c.patch("/api/roles/{id}", {
      ...path(id),
      body: { permissions: ["users:read"] },
    }));
  assertEquals(await widen(empty), CANNOT_GRANT);
  const limited = await role(svc, []);
  assert(
    (await svc.admin.post("/api/assignments", {
      body: { roleId: limited, userId: someone.account.id, reachGroupId: g },
    })).ok,
  );
  assertEquals((await widen(limited)).ok, true);

  // A member who reads everyone reaches further than the lead.
  assert(
    (await svc.admin.post("/api/assignments", {
      body: { roleId: reader, userId: inside.account.id },
    })).ok,
  );
  assertEquals(
    await said(c.post("/api/assignments", {
      body: {
        roleId: await role(svc, ["users:read"]),
        userId: inside.account.id,
        reachGroupId: g,
      },
    })),
    OUTRANKED,
  );
});

Deno.test("a limited assignment grants only the permissions that act on users; a role is held once per reach", async () => {
  const svc = await service();
  const { lead, g, assignment } = await region(svc, [
    "users:read",
    "roles:manage",
  ]);
  const again = (reachGroupId?: number) =>
    said(svc.admin.post("/api/assignments", {
      body: {
        roleId: assignment.roleId,
        userId: lead.account.id,
        ...reachGroupId && { reachGroupId },
      },
    }));
  assertEquals(await again(g), {
    ok: false,
    status: 409,
    error: "Assignment already exists",
  });
  assertEquals<unknown>(
    await dataOf(lead.client.get("/api/auth/permissions")),
    {
      permissions: ["users:read"],
      reach: { groupIds: [g] },
    },
  );
  assertEquals(await said(lead.client.get("/api/roles")), FORBIDDEN);
  // The same role over a second group, and over everyone: two more.
  const second = await group(svc);
  assertEquals((await again(second)).ok, true);
  assertEquals<unknown>(
    await dataOf(lead.client.get("/api/auth/permissions")),
    {
      permissions: ["users:read"],
      reach: { groupIds: [g, second].sort((a, b) => a - b) },
    },
  );
  assertEquals((await again()).ok, true);
  assertEquals<unknown>(
    await dataOf(lead.client.get("/api/auth/permissions")),
    {
      permissions: ["users:read", "roles:manage"],
      reach: "all",
    },
  );
});
