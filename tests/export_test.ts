/**
 * Exports: every user as NDJSON, streamed, hashes only when asked (and
 * recorded); an export imported into a fresh database gives back the same
 * users, each logging in with the password they had.
 */
import { argon2id } from "hash-wasm";
import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  startService,
  type TestService,
} from "./support/service.ts";
import { createConnection, scimClient, USER_SCHEMA } from "./scim_support.ts";

/** Over the port, past the harness's recorder: an export with hashes shows bcrypt hashes by design. */
async function exported(svc: TestService, query = "") {
  const res = await fetch(`${svc.baseUrl}/api/users/export${query}`, {
    headers: { cookie: await loginCookie(svc) },
  });
  assertEquals(res.status, 200);
  assertEquals(res.headers.get("content-type"), "application/x-ndjson");
  return await res.text();
}

async function importBody(svc: TestService, body: string, query = "") {
  const res = await fetch(`${svc.baseUrl}/api/imports${query}`, {
    method: "POST",
    headers: {
      "content-type": "application/x-ndjson",
      cookie: await loginCookie(svc),
    },
    body,
  });
  assertEquals(res.status, 202);
  const { id } = await res.json();
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    const { data } = await svc.admin.GET("/api/imports/{id}", {
      params: { path: { id } },
    });
    if (data && !["queued", "running"].includes(data.status)) {
      const errors = await svc.admin.GET("/api/imports/{id}/errors", {
        params: { path: { id } },
      });
      return { done: data, errors: errors.data! };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the import did not end");
}

const withoutVolatile = (text: string) =>
  text.trim().split("\n").map((l) => {
    const { id: _, lastLoginAt: __, ...rest } = JSON.parse(l);
    return rest;
  });

Deno.test("GET /api/users/export is the export, not a user of id `export`; hashes only when asked, recorded", async () => {
  await using svc = await startService({}, { bcryptCost: 4 });
  const text = await exported(svc);
  const lines = text.trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.length, 1);
  assertEquals(Object.keys(lines[0]).sort(), [
    "createdAt",
    "department",
    "disabled",
    "email",
    "externalId",
    "id",
    "lastLoginAt",
    "name",
    "role",
    "username",
  ]);
  const withHashes = await exported(svc, "?include=passwordHash");
  assert(/^\$2b\$/.test(JSON.parse(withHashes).passwordHash));
  const bad = await svc.adminFetch("/api/users/export?include=secrets");
  assertEquals(bad.status, 400);
  assertEquals(await bad.json(), {
    error: "Invalid query parameter: include",
  });
  const records = await svc.admin.GET("/api/audit", {
    params: { query: { action: "users.exported" } },
  });
  assertEquals(records.data?.map((r) => r.details), [
    { count: 1, passwordHashes: true },
    { count: 1, passwordHashes: false },
  ]);
});

Deno.test("an export imports into a fresh database unchanged, and every user logs in with the old password", async () => {
  const users = Array.from({ length: 30 }, (_, i) => ({
    username: `mover${i}`,
    name: `Mover ${i}`,
    email: `mover${i}@example.com`,
    password: `mover-password-${i}`,
  }));
  await using from = await startService({}, { bcryptCost: 4 });
  const argon = await argon2id({
    password: users[0].password,
    salt: new Uint8Array(16).fill(1),
    parallelism: 1,
    iterations: 2,
    memorySize: 8192,
    hashLength: 32,
    outputType: "encoded",
  });
  const seeded = await importBody(
    from,
    users.map((u, i) =>
      JSON.stringify({
        ...u,
        // One keeps a hash of another scheme, to move as it is.
        ...(i === 0 && { password: undefined, passwordHash: argon }),
        role: i % 3 === 0 ? "admin" : "viewer",
        externalId: i % 2 === 0 ? `ext-${i}` : null,
        createdAt: new Date(Date.UTC(2020, 0, 1 + i)).toISOString(),
        disabled: i === 5
          ? {
            reason: "On leave",
            until: null,
            since: "2025-01-01T00:00:00.000Z",
          }
          : null,
      })
    ).join("\n"),
  );
  assertEquals(seeded.errors, []);
  const before = await exported(from, "?include=passwordHash");

  await using to = await startService({}, { bcryptCost: 4 });
  // The fresh service's own first admin has the name of the old one.
  const moved = await importBody(to, before, "?onConflict=skip");
  assertEquals(moved.errors, []);
  assertEquals(moved.done.created, users.length);
  assertEquals(moved.done.skipped, 1);
  const after = await exported(to, "?include=passwordHash");
  assertEquals(
    withoutVolatile(after).filter((u) => u.username !== "admin"),
    withoutVolatile(before).filter((u) => u.username !== "admin"),
  );
  for (const [i, u] of users.entries()) {
    const login = await to.client().login(u.username, u.password);
    if (i === 5) {
      assertEquals(login.ok, false, "the disabled user stays disabled");
    } else assert(login.ok, `${u.username} logs in with the old password`);
  }
});

Deno.test("a provisioned user's export shows the externalId its identity provider gave it, and an import of the export keeps it", async () => {
  await using from = await startService({}, { bcryptCost: 4 });
  const okta = await createConnection(from, "Okta");
  const scim = scimClient(from, okta.token);
  const made = await scim.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "provisioned",
    externalId: "00u1okta",
    name: { formatted: "Provisioned User" },
    emails: [{ value: "provisioned@example.com", primary: true }],
  });
  assertEquals(made.status, 201);
  // An import's externalId is the user's own: it comes before a link's.
  const imported = await importBody(
    from,
    JSON.stringify({
      username: "both",
      name: "Both Ways",
      email: "both@example.com",
      externalId: "legacy-7",
    }),
  );
  assertEquals(imported.errors, []);
  const both = await from.admin.GET("/api/users", {
    params: { query: { q: "both" } },
  });
  const linked = await scim.put(`/Users/${both.data![0].id}`, {
    schemas: [USER_SCHEMA],
    userName: "both",
    externalId: "00u2okta",
    name: { formatted: "Both Ways" },
    emails: [{ value: "both@example.com", primary: true }],
  });
  assertEquals(linked.status, 200);
  assertEquals(linked.body.externalId, "00u2okta");

  const externalIds = (text: string) =>
    Object.fromEntries(
      withoutVolatile(text).map((u) => [u.username, u.externalId]),
    );
  const before = await exported(from);
  assertEquals(externalIds(before), {
    admin: null,
    provisioned: "00u1okta",
    both: "legacy-7",
  });

  await using to = await startService({}, { bcryptCost: 4 });
  const moved = await importBody(to, before, "?onConflict=skip");
  assertEquals(moved.errors, []);
  assertEquals(externalIds(await exported(to)), externalIds(before));
});
