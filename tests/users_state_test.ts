/**
 * What a list screen needs of the API: each user's state on the list
 * (`include=state`), the count of a filter (exact up to 10,000, else an
 * estimate), exports narrowed by the list's filters or to a selection,
 * where a user came from (and the connection that owns them, with their
 * groups) on their detail, and a connection's last request.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { loginCookie, startService } from "./support/service.ts";
import { seedUsers } from "./support/seed.ts";
import { createConnection, GROUP_SCHEMA, scimClient } from "./scim_support.ts";

Deno.test("include=state: each item carries disabled, lastLoginAt, mfaEnabled and source; without it the items are as before", async () => {
  await using svc = await startService({}, { bcryptCost: 4 });
  const ann = await svc.admin.POST("/api/users", {
    body: {
      username: "ann",
      name: "Ann",
      email: "ann@example.com",
      password: "ann-password",
      role: "viewer",
    },
  });
  assert(ann.data);
  const disabled = await svc.admin.POST("/api/users/{id}/disable", {
    params: { path: { id: ann.data.id } },
    body: { reason: "Leave", until: "2099-01-31T12:00:00Z" },
  });
  assertEquals(disabled.response.status, 200);

  const plain = await svc.admin.GET("/api/users", {
    params: { query: { limit: 10 } },
  });
  assert(plain.data);
  assertEquals(
    Object.keys(plain.data[1]).sort(),
    ["createdAt", "email", "id", "name", "role", "username"],
  );

  const withState = await svc.admin.GET("/api/users", {
    params: { query: { limit: 10, include: "state" } },
  });
  assert(withState.data);
  const [admin, listedAnn] = withState.data;
  assertEquals(admin.username, "admin");
  assert(admin.lastLoginAt, "the admin has signed in");
  assertEquals(admin.disabled, null);
  assertEquals(admin.mfaEnabled, false);
  assertEquals(admin.source, { type: "api", id: null, name: null });
  assertEquals(listedAnn.lastLoginAt, null);
  assertEquals(listedAnn.disabled?.reason, "Leave");
  assertEquals(listedAnn.disabled?.until, "2099-01-31T12:00:00.000Z");

  // A tag of one shape never answers the other's request.
  const tag = withState.response.headers.get("etag")!;
  const other = await svc.admin.GET("/api/users", {
    params: { query: { limit: 10 }, header: { "if-none-match": tag } },
  });
  assertEquals(other.response.status, 200);

  // The next link keeps it.
  const paged = await svc.admin.GET("/api/users", {
    params: { query: { limit: 1, include: "state" } },
  });
  const link = paged.response.headers.get("link") ?? "";
  assert(link.includes("include=state"), link);

  // The streamed whole list too.
  const all = await svc.admin.GET("/api/users", {
    params: { query: { include: "state" } },
  });
  assert(all.data);
  assertEquals(all.data.map((u) => u.source?.type), ["api", "api"]);

  const bad = await svc.admin.GET("/api/users", {
    params: { query: { include: "all" as "state" } },
  });
  assertEquals(bad.response.status, 400);
  assertEquals(bad.error, { error: "Invalid query parameter: include" });
});

Deno.test("GET /api/users/count counts a filter exactly up to 10,000, and past that says it estimates", async () => {
  await using svc = await startService({}, { bcryptCost: 4 });
  // Seeded users are user2..user31 (numbered after the admin).
  await seedUsers(svc.sql, 31);
  const count = async (query: { q?: string; role?: "admin" | "viewer" }) => {
    const { data, response } = await svc.admin.GET("/api/users/count", {
      params: { query },
    });
    assertEquals(response.status, 200);
    return data!;
  };
  assertEquals(await count({}), { count: 31, exact: true });
  assertEquals(await count({ role: "admin" }), { count: 1, exact: true });
  assertEquals(await count({ q: "user1" }), { count: 10, exact: true });

  await seedUsers(svc.sql, 10_031);
  const many = await count({});
  assertEquals(many.exact, false);
  assert(many.count > 10_000, `${many.count}`);

  const bad = await svc.admin.GET("/api/users/count", {
    params: { query: { status: "gone" as "active" } },
  });
  assertEquals(bad.error, { error: "Invalid query parameter: status" });
});

Deno.test("GET /api/users/export takes the list's filters and a selection of ids, and records how many it sent", async () => {
  await using svc = await startService({}, { bcryptCost: 4 });
  const ids: number[] = [];
  for (const name of ["ann", "bob", "cyd"]) {
    const { data } = await svc.admin.POST("/api/users", {
      body: {
        username: name,
        name: name.toUpperCase(),
        email: `${name}@example.com`,
        password: `${name}-password`,
        role: "viewer",
      },
    });
    ids.push(data!.id);
  }
  const cookie = await loginCookie(svc);
  const exported = async (query: string) => {
    const res = await fetch(`${svc.baseUrl}/api/users/export?${query}`, {
      headers: { cookie },
    });
    const text = await res.text();
    return {
      status: res.status,
      text,
      usernames: res.status === 200
        ? text.trim().split("\n").map((l) => JSON.parse(l).username)
        : [],
    };
  };
  assertEquals((await exported("q=b")).usernames, ["bob"]);
  assertEquals((await exported("role=admin")).usernames, ["admin"]);
  assertEquals(
    (await exported(`ids=${ids[2]},${ids[0]},999999`)).usernames,
    ["ann", "cyd"],
  );
  const records = await svc.admin.GET("/api/audit", {
    params: { query: { action: "users.exported", limit: 1 } },
  });
  assertEquals(records.data?.[0].details, {
    count: 2,
    passwordHashes: false,
  });
  const bad = await exported("ids=1,x");
  assertEquals(bad.status, 400);
  assertEquals(JSON.parse(bad.text), {
    error: "Invalid query parameter: ids",
  });
});

Deno.test("a provisioned user's detail names the connection, the externalId and their groups; the connection shows its last request", async () => {
  await using svc = await startService({}, { bcryptCost: 4 });
  const conn = await createConnection(svc, "Okta");
  assertEquals(conn.lastUsedAt, null);
  const idp = scimClient(svc, conn.token);
  const made = await idp.post("/Users", {
    userName: "sam@example.com",
    displayName: "Sam",
    externalId: "okta-sam-1",
  });
  assertEquals(made.status, 201);
  const id = Number(made.body.id);
  const group = await idp.post("/Groups", {
    schemas: [GROUP_SCHEMA],
    displayName: "Engineering",
    members: [{ value: String(id) }],
  });
  assertEquals(group.status, 201);

  const { data } = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id } },
  });
  assert(data);
  assertEquals(data.source, { type: "scim", id: conn.id, name: "Okta" });
  assertEquals(data.scim, {
    connection: { id: conn.id, name: "Okta" },
    externalId: "okta-sam-1",
    groups: [{ id: Number(group.body.id), displayName: "Engineering" }],
  });
  const listed = await svc.admin.GET("/api/users", {
    params: { query: { q: "sam", include: "state" } },
  });
  assertEquals(listed.data?.[0].source, {
    type: "scim",
    id: conn.id,
    name: "Okta",
  });

  const admin = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
  });
  assertEquals(admin.data?.source, { type: "api", id: null, name: null });
  assertEquals(admin.data?.scim, null);

  // The connection's last request, kept to the minute.
  const seen = await svc.admin.GET("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  const first = seen.data?.lastUsedAt;
  assert(first, "a request was made");
  await idp.get("/Users?count=1");
  const again = await svc.admin.GET("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  assertEquals(again.data?.lastUsedAt, first, "written at most once a minute");
  await svc.sql`update scim_connections
    set last_used_at = last_used_at - interval '2 minutes'`;
  await idp.get("/Users?count=1");
  const later = await svc.admin.GET("/api/scim/connections", {});
  const latest = later.data?.[0].lastUsedAt ?? "";
  assert(Date.parse(latest) >= Date.parse(first), `written again: ${latest}`);

  // A deleted connection owns no one: the user still says where they came from.
  await svc.admin.DELETE("/api/scim/connections/{id}", {
    params: { path: { id: conn.id } },
  });
  const orphan = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id } },
  });
  assertEquals(orphan.data?.source.type, "scim");
  assertEquals(orphan.data?.scim, null);
});
