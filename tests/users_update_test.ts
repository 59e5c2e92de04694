import { assert, assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/** PATCHes any JSON value (or raw text) as the admin; answers status and body. */
async function patch(svc: TestService, id: number | string, body: unknown) {
  const res = await svc.adminFetch(`/api/users/${id}`, {
    method: "PATCH",
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return [res.status, await res.json()];
}

async function viewer(svc: TestService) {
  const { account, password } = await svc.userClient("viewer");
  return { ...account, password };
}

const hashOf = async (svc: TestService, id: number) =>
  (await svc.sql<
    { h: string }[]
  >`select password_hash as h from users where id = ${id}`)[0].h;

Deno.test("changing the role answers 200 with id, username, name, email and role", async () => {
  const svc = await service();
  const v = await viewer(svc);
  const { data, response } = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: v.id } },
    body: { role: "admin" },
  });
  assertEquals(response.status, 200);
  assertEquals(data, {
    id: v.id,
    username: v.username,
    name: v.name,
    email: v.email,
    role: "admin",
  });
  const got = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: v.id } },
  });
  assertEquals(got.data!.role, "admin");
});

Deno.test("resetting the password stores a new hash: the new one logs in, the old one does not", async () => {
  const svc = await service();
  const v = await viewer(svc);
  const before = await hashOf(svc, v.id);
  const [status, body] = await patch(svc, v.id, { password: "new-password-1" });
  assertEquals([status, body.role], [200, "viewer"]);
  assert((await hashOf(svc, v.id)) !== before);
  assertEquals(
    (await svc.client().login(v.username, "new-password-1")).status,
    200,
  );
  assertEquals((await svc.client().login(v.username, v.password)).status, 401);
});

Deno.test("role and password can change together", async () => {
  const svc = await service();
  const v = await viewer(svc);
  const [status, body] = await patch(svc, v.id, {
    role: "admin",
    password: "new-password-2",
  });
  assertEquals([status, body.role], [200, "admin"]);
  const c = svc.client();
  assertEquals((await c.login(v.username, "new-password-2")).status, 200);
  assertEquals((await c.GET("/api/users")).response.status, 200);
});

Deno.test("absent, empty or null fields are ignored and leave the user unchanged", async () => {
  const svc = await service();
  const v = await viewer(svc);
  const hash = await hashOf(svc, v.id);
  for (
    const body of [{}, { role: "" }, { password: "" }, {
      role: null,
      password: null,
    }, { other: "x" }]
  ) {
    const [status, answer] = await patch(svc, v.id, body);
    assertEquals(status, 200, JSON.stringify(body));
    assertEquals(answer.role, "viewer");
  }
  assertEquals(await hashOf(svc, v.id), hash);
});

Deno.test("a role other than admin or viewer answers 400 Invalid role and changes nothing", async () => {
  const svc = await service();
  const v = await viewer(svc);
  for (
    const role of ["superuser", "Admin", " admin", " ", 5, false, ["admin"], {
      r: 1,
    }]
  ) {
    assertEquals(await patch(svc, v.id, { role }), [400, {
      error: "Invalid role",
    }], JSON.stringify(role));
  }
  assertEquals(
    (await svc.admin.GET("/api/users/{id}", { params: { path: { id: v.id } } }))
      .data!.role,
    "viewer",
  );
});

Deno.test("the role is validated before the password", async () => {
  const svc = await service();
  const v = await viewer(svc);
  const hash = await hashOf(svc, v.id);
  for (const password of ["short", 12345678, "p".repeat(73)]) {
    assertEquals(await patch(svc, v.id, { role: "root", password }), [400, {
      error: "Invalid role",
    }]);
  }
  // A valid role with a bad password changes nothing either.
  assertEquals(await patch(svc, v.id, { role: "admin", password: "short" }), [
    400,
    {
      error: "Password must be at least 8 characters",
    },
  ]);
  assertEquals(
    (await svc.admin.GET("/api/users/{id}", { params: { path: { id: v.id } } }))
      .data!.role,
    "viewer",
  );
  assertEquals(await hashOf(svc, v.id), hash);
});

Deno.test("a password under 8 characters or over 72 bytes answers 400; one not a string answers Invalid request body", async () => {
  const svc = await service();
  const v = await viewer(svc);
  assertEquals(await patch(svc, v.id, { password: "1234567" }), [400, {
    error: "Password must be at least 8 characters",
  }]);
  assertEquals(await patch(svc, v.id, { password: "😀".repeat(7) }), [400, {
    error: "Password must be at least 8 characters",
  }]);
  assertEquals(await patch(svc, v.id, { password: "é".repeat(37) }), [400, {
    error: "Password must be at most 72 bytes",
  }]);
  for (const password of [12345678, true, ["password1"], { p: 1 }]) {
    assertEquals(await patch(svc, v.id, { password }), [400, {
      error: "Invalid request body",
    }], JSON.stringify(password));
  }
});

Deno.test("a body that is not JSON, or JSON that is not an object, answers 400 Invalid request body", async () => {
  const svc = await service();
  const v = await viewer(svc);
  for (
    const body of [
      "not json",
      "{",
      "",
      "null",
      "[]",
      '["role"]',
      "42",
      '"admin"',
      "true",
    ]
  ) {
    assertEquals(await patch(svc, v.id, body), [400, {
      error: "Invalid request body",
    }], JSON.stringify(body));
  }
});

Deno.test("the body is checked before the id is looked up", async () => {
  const svc = await service();
  assertEquals(await patch(svc, "abc", { role: "root" }), [400, {
    error: "Invalid role",
  }]);
  assertEquals(await patch(svc, 999999, "not json"), [400, {
    error: "Invalid request body",
  }]);
  assertEquals(await patch(svc, 999999, { role: "admin" }), [404, {
    error: "User not found",
  }]);
});

Deno.test("an admin may demote themselves, even the last admin", async () => {
  const svc = await service();
  const { data } = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
    body: { role: "viewer" },
  });
  assertEquals(data!.role, "viewer");
  assertEquals((await svc.admin.GET("/api/users")).response.status, 403);
});

Deno.test("a PATCH body over 64 KiB answers 413", async () => {
  const svc = await service();
  const v = await viewer(svc);
  assertEquals(
    await patch(svc, v.id, { role: "admin", pad: "x".repeat(70_000) }),
    [413, { error: "Request body too large" }],
  );
});
