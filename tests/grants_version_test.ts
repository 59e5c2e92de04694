/**
 * The grants' version (migration 038, docs/delegation.md): every change of
 * what roles grant moves it, through each way the API makes one, and the
 * person's next request holds what the change left; writes that change no
 * grant leave it; a session's lookup keeps its grants while the version
 * holds and reads them again once it moves.
 */
import { assertEquals, assertNotEquals } from "./support/assert.ts";
import { dataOf } from "./delegation_support.ts";
import { loginCookie, sharedService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

const path = (id: number) => ({ params: { path: { id } } });

Deno.test("every change of what roles grant moves the grants' version, and the person's next request holds what it left", async () => {
  const svc = await service();
  const person = await svc.userClient("viewer");
  const version = async () =>
    (await svc.sql<{ v: string }[]>`
      select version::text as v from grants_version`)[0].v;
  const held = async () =>
    (await dataOf(person.client.get("/api/auth/permissions"))).permissions;
  /** Runs `change`; the version moves, and the person then holds `want`. */
  const step = async (
    what: string,
    change: () => Promise<unknown>,
    want: string[],
  ) => {
    // The person's lookup keeps their grants at the version before.
    await held();
    const before = await version();
    await change();
    assertNotEquals(await version(), before, `${what}: the version moved`);
    assertEquals((await held()).toSorted(), want.toSorted(), what);
  };
  const unique = () => crypto.randomUUID().slice(0, 8);

  let reader = 0;
  await step("a role made and assigned", async () => {
    reader = (await dataOf(svc.admin.post("/api/roles", {
      body: { name: `reader ${unique()}`, permissions: ["users:read"] },
    }))).id;
    await dataOf(svc.admin.post("/api/assignments", {
      body: { roleId: reader, userId: person.account.id },
    }));
  }, ["users:read"]);
  await step("the role's permissions changed", async () => {
    await dataOf(svc.admin.patch("/api/roles/{id}", {
      ...path(reader),
      body: { permissions: ["users:read", "audit:read"] },
    }));
  }, ["users:read", "audit:read"]);

  const exporter = (await dataOf(svc.admin.post("/api/roles", {
    body: { name: `exporter ${unique()}`, permissions: ["users:export"] },
  }))).id;
  const team = (await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: `Team ${unique()}` },
  }))).id;
  await step("a role given to a group the person is not in", async () => {
    await dataOf(svc.admin.post("/api/assignments", {
      body: { roleId: exporter, groupId: team },
    }));
  }, ["users:read", "audit:read"]);
  await step("the person added to the group", async () => {
    await dataOf(svc.admin.post("/api/groups/{id}/members", {
      ...path(team),
      body: { userIds: [person.account.id] },
    }));
  }, ["users:read", "audit:read", "users:export"]);
  await step("the person removed from the group", async () => {
    await dataOf(svc.admin.delete("/api/groups/{id}/members", {
      ...path(team),
      body: { userIds: [person.account.id] },
    }));
  }, ["users:read", "audit:read"]);
  await step(
    "the group's members replaced, the person among them",
    async () => {
      await dataOf(svc.admin.put("/api/groups/{id}/members", {
        ...path(team),
        body: { userIds: [person.account.id] },
      }));
    },
    ["users:read", "audit:read", "users:export"],
  );
  await step("the group deleted", async () => {
    await dataOf(svc.admin.delete("/api/groups/{id}", path(team)));
  }, ["users:read", "audit:read"]);
  await step("the assignment ended", async () => {
    const [given] = await dataOf(svc.admin.get("/api/assignments", {
      params: { query: { userId: person.account.id } },
    }));
    await dataOf(svc.admin.delete("/api/assignments/{id}", path(given.id)));
  }, []);
  await step("a role assigned again, then deleted", async () => {
    await dataOf(svc.admin.post("/api/assignments", {
      body: { roleId: exporter, userId: person.account.id },
    }));
    assertEquals(await held(), ["users:export"]);
    await dataOf(svc.admin.delete("/api/roles/{id}", path(exporter)));
  }, []);

  // Writes that change no grant leave the version as it is.
  const before = await version();
  const other = await dataOf(svc.admin.post("/api/users", {
    body: {
      username: `other-${unique()}`,
      name: "Other",
      email: `${unique()}@example.com`,
      password: "password-123",
      role: "viewer",
    },
  }));
  await loginCookie(svc, {
    username: other.username,
    password: "password-123",
  });
  await dataOf(svc.admin.patch("/api/users/{id}", {
    ...path(other.id),
    body: { name: "Other, renamed" },
  }));
  await dataOf(svc.admin.patch("/api/roles/{id}", {
    ...path(reader),
    body: { description: "Reads users and the trail" },
  }));
  assertEquals(await version(), before, "no grant changed");
});

Deno.test("a session's lookup keeps its grants while the version holds, and reads them again once it moves", async () => {
  const svc = await service();
  const person = await svc.userClient("viewer");
  const { id: roleId } = await dataOf(svc.admin.post("/api/roles", {
    body: {
      name: `kept ${crypto.randomUUID()}`,
      permissions: ["users:read"],
    },
  }));
  const held = async () =>
    (await dataOf(person.client.get("/api/auth/permissions"))).permissions;
  assertEquals(await held(), []);
  // An assignment written past the triggers (as a replica applies rows):
  // the version stays, so the lookup keeps what it read.
  await svc.sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`;
    await tx`
      insert into role_assignments (role_id, user_id)
      values (${roleId}, ${person.account.id})`;
  });
  assertEquals(await held(), [], "kept while the version holds");
  // Once it moves, the next request reads the grants again.
  await svc.sql`select grants_version_bump()`;
  assertEquals(await held(), ["users:read"], "read again once it moves");
});
