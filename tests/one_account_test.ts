/**
 * One account, one way to change it: the API, SCIM and imports change an
 * account with the same rules, the same consequences and the same records;
 * the API changes what the others change (name, e-mail); and a new optional
 * field (`department`) is carried by every door.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { loginCookie, sharedService } from "./support/service.ts";
import { ndjson, runImport } from "./support/imports.ts";
import { createKey, keyClient } from "./support/api-keys.ts";
import {
  clearScim,
  createConnection,
  ENTERPRISE,
  patchOp,
  scimClient,
  USER_SCHEMA,
} from "./scim_support.ts";
import type { TestService } from "./support/service.ts";

const service = sharedService({}, { bcryptCost: 4 });

/** The records written since `after` (an audit id), imports' own aside. */
async function recordsSince(svc: TestService, after: number) {
  await svc.store.audit.seal();
  return await svc.sql<
    {
      action: string;
      target: string | null;
      details: Record<string, unknown>;
    }[]
  >`
    select action, target_username as target, details from audit_events
    where id > ${after} and action not like 'import.%' order by id`;
}

async function lastRecord(svc: TestService) {
  await svc.store.audit.seal();
  const [{ id }] = await svc.sql<{ id: number }[]>`
    select coalesce(max(id), 0)::int as id from audit_events`;
  return id;
}

let n = 0;
/** A fresh viewer's fields, unique to this run. */
const someone = (prefix: string) => {
  n++;
  const username = `${prefix}${n}-${crypto.randomUUID().slice(0, 6)}`;
  return {
    username,
    name: `Person ${username}`,
    email: `${username}@example.com`,
    password: "correct horse",
    role: "viewer" as const,
  };
};

Deno.test("PATCH /api/users/{id} changes the name and e-mail with the create's rules, records only what differs, and answers 409 for an e-mail another user has or looks like", async () => {
  const svc = await service();
  const made = await svc.admin.POST("/api/users", { body: someone("pat") });
  assertEquals(made.response.status, 201);
  const id = made.data!.id;
  const other = await svc.admin.POST("/api/users", {
    body: someone("other"),
  });
  const since = await lastRecord(svc);

  const renamed = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { name: "  Patricia Example ", email: "patricia@example.org" },
  });
  assertEquals(renamed.response.status, 200);
  // The contract's body: the account, nothing more.
  assertEquals(renamed.data, {
    id,
    username: made.data!.username,
    name: "Patricia Example",
    email: "patricia@example.org",
    role: "viewer",
  });
  // Empty and absent fields leave the account as it is; the same name again changes nothing.
  const same = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { name: "Patricia Example", email: "", role: "" },
  });
  assertEquals(same.data?.email, "patricia@example.org");
  assertEquals(
    (await recordsSince(svc, since)).map(({ action, details }) => ({
      action,
      details,
    })),
    [{ action: "user.updated", details: { changed: ["name", "email"] } }],
  );

  for (
    const [body, status, error] of [
      [{ email: "not an address" }, 400, "Email must be a valid address"],
      [{ name: "x".repeat(201) }, 400, "Name must be at most 200 characters"],
      [
        { name: "bad\u0007name" },
        400,
        "Name contains characters that are not allowed",
      ],
      [{ name: 5 }, 400, "Invalid request body"],
      // The create's order: the password's rules before the name's.
      [
        { password: "short", name: "x".repeat(201) },
        400,
        "Password must be at least 8 characters",
      ],
      [
        { email: other.data!.email.toUpperCase() },
        409,
        "Username or email already exists",
      ],
      // A look-alike: Cyrillic `о` for Latin `o` in the local part.
      [
        { email: other.data!.email.replace("o", "\u043e") },
        409,
        "Username or email already exists",
      ],
    ] as const
  ) {
    const res = await svc.admin.PATCH("/api/users/{id}", {
      params: { path: { id } },
      body: body as never,
    });
    assertEquals(
      [res.response.status, res.error],
      [status, { error: error }],
      JSON.stringify(body),
    );
  }
  const after = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id } },
  });
  assertEquals(
    [after.data?.name, after.data?.email],
    ["Patricia Example", "patricia@example.org"],
  );
  // The new e-mail is the account's key: its old one is free again, the new one taken.
  const reuse = await svc.admin.POST("/api/users", {
    body: { ...someone("reuse"), email: made.data!.email },
  });
  assertEquals(reuse.response.status, 201);
  const taken = await svc.admin.POST("/api/users", {
    body: { ...someone("taken"), email: "Patricia@Example.org" },
  });
  assertEquals(taken.response.status, 409);
});

Deno.test("department: set by POST, shown by GET /api/users/{id} only, changed and cleared by PATCH, at most 100 characters", async () => {
  const svc = await service();
  const body = { ...someone("dep"), department: "  Finance " };
  const made = await svc.admin.POST("/api/users", { body });
  assertEquals(made.response.status, 201);
  // The bodies the contract fixes stay as they are.
  assertEquals(Object.keys(made.data!).sort(), [
    "createdAt",
    "email",
    "id",
    "name",
    "role",
    "username",
  ]);
  const id = made.data!.id;
  const list = await svc.admin.GET("/api/users");
  const item = list.data!.find((u) => u.id === id)!;
  assert(!("department" in item));
  const detail = async () =>
    (await svc.admin.GET("/api/users/{id}", { params: { path: { id } } }))
      .data?.department;
  assertEquals(await detail(), "Finance");

  const since = await lastRecord(svc);
  const changed = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { department: "Legal" },
  });
  assertEquals(changed.response.status, 200);
  assert(!("department" in changed.data!));
  assertEquals(await detail(), "Legal");
  const cleared = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { department: "" },
  });
  assertEquals(cleared.response.status, 200);
  assertEquals(await detail(), null);
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { department: "Ops" },
  });
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { department: null },
  });
  assertEquals(await detail(), null);
  assertEquals(
    (await recordsSince(svc, since)).map((r) => r.details),
    [
      { changed: ["department"] },
      { changed: ["department"] },
      { changed: ["department"] },
      { changed: ["department"] },
    ],
  );

  const long = "é".repeat(101);
  for (
    const [request, status, error] of [
      [
        () =>
          svc.admin.PATCH("/api/users/{id}", {
            params: { path: { id } },
            body: { department: long },
          }),
        400,
        "Department must be at most 100 characters",
      ],
      [
        () =>
          svc.admin.POST("/api/users", {
            body: { ...someone("long"), department: long },
          }),
        400,
        "Department must be at most 100 characters",
      ],
      [
        () =>
          svc.admin.PATCH("/api/users/{id}", {
            params: { path: { id } },
            body: { department: "a\nb" },
          }),
        400,
        "Invalid request body",
      ],
      [
        () =>
          svc.admin.PATCH("/api/users/{id}", {
            params: { path: { id } },
            body: { department: 7 as never },
          }),
        400,
        "Invalid request body",
      ],
    ] as const
  ) {
    const res = await request();
    assertEquals([res.response.status, res.error], [status, { error }]);
  }
  const exactly = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id } },
    body: { department: "é".repeat(100) },
  });
  assertEquals(exactly.response.status, 200);
  // `me` is the contract's too.
  const me = await svc.admin.GET("/api/auth/me");
  assert(!("department" in me.data!));
});

Deno.test("department travels through every door: SCIM's enterprise department, the export and an import", async () => {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Entra");
  const idp = scimClient(svc, conn.token);
  const created = await idp.post("/Users", {
    schemas: [USER_SCHEMA, ENTERPRISE],
    userName: `dana-${crypto.randomUUID().slice(0, 6)}@example.com`,
    displayName: "Dana",
    [ENTERPRISE]: { department: "Research", employeeNumber: "42" },
  });
  assertEquals(created.status, 201);
  const id = Number(created.body.id);
  const department = async () =>
    (await svc.admin.GET("/api/users/{id}", { params: { path: { id } } }))
      .data?.department;
  assertEquals(await department(), "Research");

  const patched = await idp.patch(
    `/Users/${id}`,
    patchOp({
      op: "replace",
      path: `${ENTERPRISE}:department`,
      value: "Design",
    }),
  );
  assertEquals(patched.status, 200);
  assertEquals(patched.body[ENTERPRISE].department, "Design");
  assertEquals(await department(), "Design");
  const tooLong = await idp.patch(
    `/Users/${id}`,
    patchOp({
      op: "replace",
      path: `${ENTERPRISE}:department`,
      value: "d".repeat(101),
    }),
  );
  assertEquals([tooLong.status, tooLong.body.scimType], [400, "invalidValue"]);
  assertEquals(await department(), "Design");

  // Set through the API, read through SCIM, kept by a PATCH of another attribute.
  const api = await svc.admin.POST("/api/users", {
    body: { ...someone("ext"), department: "Sales" },
  });
  const apiId = api.data!.id;
  const read = await idp.get(`/Users/${apiId}`);
  assertEquals(read.body[ENTERPRISE]?.department, "Sales");
  assert(read.body.schemas.includes(ENTERPRISE));

  // The export carries it; an import creates and updates with it.
  const res = await fetch(`${svc.baseUrl}/api/users/export`, {
    headers: { cookie: await loginCookie(svc) },
  });
  const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(lines.find((l) => l.id === apiId)?.department, "Sales");
  assertEquals(lines.find((l) => l.id === id)?.department, "Design");

  const fresh = someone("imp");
  const since = await lastRecord(svc);
  const { done, errors } = await runImport(
    svc,
    ndjson([
      { ...fresh, department: "Support" },
      { ...someone("implong"), department: "x".repeat(101) },
      {
        username: api.data!.username,
        name: api.data!.name,
        email: api.data!.email,
        department: "Marketing",
      },
    ]),
    { query: "?onConflict=update" },
  );
  assertEquals([done.created, done.updated], [1, 1]);
  assertEquals(errors.map((e: { error: string }) => e.error), [
    "Department must be at most 100 characters",
  ]);
  const [row] = await svc.sql<{ department: string }[]>`
    select department from users where username = ${fresh.username}`;
  assertEquals(row.department, "Support");
  assertEquals(
    (await svc.admin.GET("/api/users/{id}", {
      params: { path: { id: apiId } },
    })).data?.department,
    "Marketing",
  );
  const updated = (await recordsSince(svc, since)).filter((r) =>
    r.action === "user.updated"
  );
  assertEquals(updated.map((r) => r.details), [{ changed: ["department"] }]);
});

Deno.test("a connection changes an account with the API's rules and records: a userName past 64 characters is refused, a rename is `user.updated` `{changed}` in the API's words, and a deactivation disables, ends sessions and records as the API does", async () => {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const long = await idp.post("/Users", {
    userName: `${"l".repeat(60)}@example.com`,
  });
  assertEquals([long.status, long.body.scimType], [400, "invalidValue"]);
  const local = `sam-${crypto.randomUUID().slice(0, 6)}`;
  const created = await idp.post("/Users", {
    userName: `${local}@example.com`,
    displayName: "Sam",
    password: "correct horse",
  });
  assertEquals(created.status, 201);
  const id = Number(created.body.id);
  const login = await svc.client().login(
    `${local}@example.com`,
    "correct horse",
  );
  assertEquals(login.status, 200);

  let since = await lastRecord(svc);
  const renamed = await idp.patch(
    `/Users/${id}`,
    patchOp({
      op: "replace",
      path: "userName",
      value: `${local}2@example.com`,
    }),
  );
  assertEquals(renamed.status, 200);
  const scimRename = await recordsSince(svc, since);
  assertEquals(scimRename.map((r) => [r.action, r.details.changed]), [
    ["user.updated", ["username"]],
  ]);
  assertEquals(scimRename[0].details.connection, {
    id: conn.id,
    name: "Okta",
  });

  since = await lastRecord(svc);
  const off = await idp.patch(
    `/Users/${id}`,
    patchOp({ op: "replace", path: "active", value: false }),
  );
  assertEquals(off.status, 200);
  const scimDisable = await recordsSince(svc, since);
  assertEquals(scimDisable.map((r) => r.action), ["user.disabled"]);
  assertEquals(scimDisable[0].details, {
    reason: "Deprovisioned by Okta",
    until: null,
    connection: { id: conn.id, name: "Okta" },
  });
  const [{ sessions }] = await svc.sql<{ sessions: number }[]>`
    select count(*)::int as sessions from sessions where user_id = ${id}`;
  assertEquals(sessions, 0);

  // The same disable through the API: the same action and detail shape.
  const viewer = await svc.userClient("viewer");
  since = await lastRecord(svc);
  await svc.admin.POST("/api/users/{id}/disable", {
    params: { path: { id: viewer.account.id } },
    body: { reason: "Deprovisioned by Okta" },
  });
  const apiDisable = await recordsSince(svc, since);
  assertEquals(apiDisable.map((r) => r.action), ["user.disabled"]);
  const { connection: _, ...scimDetails } = scimDisable[0].details;
  assertEquals(apiDisable[0].details, scimDetails);

  // A deletion: `user.deleted` through both doors.
  since = await lastRecord(svc);
  assertEquals((await idp.delete(`/Users/${id}`)).status, 204);
  await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: viewer.account.id } },
  });
  assertEquals(
    (await recordsSince(svc, since)).map((r) => [r.action, r.details]),
    [
      ["user.deleted", { connection: { id: conn.id, name: "Okta" } }],
      ["user.deleted", {}],
    ],
  );
});

Deno.test("a user provisioned without a password and one imported without one hold the same unusable password", async () => {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const scimName = `nopw-${crypto.randomUUID().slice(0, 6)}@example.com`;
  assertEquals((await idp.post("/Users", { userName: scimName })).status, 201);
  const imported = someone("nopw");
  const { password: _, ...noPassword } = imported;
  const { done } = await runImport(svc, ndjson([noPassword]));
  assertEquals(done.created, 1);
  const rows = await svc.sql<{ hash: string }[]>`
    select password_hash as hash from users
    where username in (${scimName}, ${imported.username})`;
  assertEquals(rows.map((r) => r.hash), ["!", "!"]);
  assertEquals(
    (await svc.client().login(scimName, "anything at all")).status,
    401,
  );
});

Deno.test("demoting an admin who minted a key for someone gives the same records and revocation through the API and through a connection's groups", async () => {
  const svc = await service();
  await clearScim(svc);
  /** The records of a demotion, key ids made alike and the connection set aside. */
  const demotion = async (since: number) =>
    (await recordsSince(svc, since)).map(({ action, details }) => {
      const { connection: _, keyId, ...rest } = details;
      return {
        action,
        details: keyId === undefined ? rest : { ...rest, keyId: "key" },
      };
    });

  // Through the API.
  const admin = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  const apiKey = await createKey(
    svc,
    viewer.account.id,
    "minted",
    admin.client,
  );
  let since = await lastRecord(svc);
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: admin.account.id } },
    body: { role: "viewer" },
  });
  const byApi = await demotion(since);
  assertEquals(
    (await keyClient(svc, apiKey.key).GET("/api/auth/me")).response.status,
    401,
  );

  // Through a connection: admin by its group, demoted by leaving it.
  const conn = await createConnection(svc, "Okta", ["Admins"]);
  const idp = scimClient(svc, conn.token);
  const local = `grace-${crypto.randomUUID().slice(0, 6)}`;
  const made = await idp.post("/Users", {
    userName: `${local}@example.com`,
    password: "correct horse",
  });
  const group = await idp.post("/Groups", {
    displayName: "Admins",
    members: [{ value: made.body.id }],
  });
  assertEquals(group.status, 201);
  const grace = svc.client();
  assertEquals(
    (await grace.login(`${local}@example.com`, "correct horse")).status,
    200,
  );
  const scimKey = await createKey(svc, viewer.account.id, "minted", grace);
  since = await lastRecord(svc);
  const left = await idp.patch(
    `/Groups/${group.body.id}`,
    patchOp({ op: "remove", path: `members[value eq "${made.body.id}"]` }),
  );
  assertEquals(left.status, 200);
  const byScim = await demotion(since);
  assertEquals(
    (await keyClient(svc, scimKey.key).GET("/api/auth/me")).response.status,
    401,
  );

  assertEquals(byApi, [
    { action: "user.role_changed", details: { from: "admin", to: "viewer" } },
    {
      action: "key.revoked",
      details: { keyId: "key", name: "minted", reason: "minter removed" },
    },
  ]);
  assertEquals(byScim.filter((r) => r.action !== "group.updated"), byApi);
});

Deno.test("a rename to a name another user's looks like is refused at every door, and nothing changes", async () => {
  const svc = await service();
  await clearScim(svc);
  const taken = await svc.admin.POST("/api/users", { body: someone("olga") });
  // Cyrillic `о` for the Latin `o` of the taken e-mail.
  const lookalike = taken.data!.email.replace("o", "\u043e");

  const target = await svc.admin.POST("/api/users", { body: someone("tim") });
  const api = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: target.data!.id } },
    body: { email: lookalike },
  });
  assertEquals([api.response.status, api.error], [409, {
    error: "Username or email already exists",
  }]);

  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const made = await idp.post("/Users", {
    userName: `tom-${crypto.randomUUID().slice(0, 6)}@example.com`,
  });
  const scim = await idp.patch(
    `/Users/${made.body.id}`,
    patchOp({
      op: "replace",
      path: "emails",
      value: [{ value: lookalike, type: "work", primary: true }],
    }),
  );
  assertEquals([scim.status, scim.body.scimType], [409, "uniqueness"]);

  const { done, errors } = await runImport(
    svc,
    ndjson([{
      username: target.data!.username,
      name: target.data!.name,
      email: lookalike,
    }]),
    { query: "?onConflict=update" },
  );
  assertEquals(done.updated, 0);
  assertEquals(errors.map((e: { error: string }) => e.error), [
    "Username or email already exists",
  ]);
  const after = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: target.data!.id } },
  });
  assertEquals(after.data?.email, target.data!.email);
});
