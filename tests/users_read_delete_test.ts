import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

Deno.test("the list holds every user with exactly the contract's fields, oldest first", async () => {
  const svc = await service();
  const made = [];
  for (const role of ["viewer", "admin", "viewer"] as const) {
    made.push((await svc.userClient(role)).account);
  }
  const { data, response } = await svc.admin.GET("/api/users");
  assertEquals(response.status, 200);
  assertEquals(data!.map((u) => u.id), [
    svc.adminAccount.id,
    ...made.map((u) => u.id),
  ]);
  for (const user of data!) {
    assertEquals(Object.keys(user).sort(), [
      "createdAt",
      "email",
      "id",
      "name",
      "role",
      "username",
    ]);
  }
  const times = data!.map((u) => Date.parse(u.createdAt));
  assertEquals([...times].sort((a, b) => a - b), times);
});

Deno.test("users created at the same instant are listed by id", async () => {
  const svc = await service();
  const a = (await svc.userClient("viewer")).account;
  const b = (await svc.userClient("viewer")).account;
  await svc.sql`update users set created_at = '2030-01-01T00:00:00Z'`;
  const { data } = await svc.admin.GET("/api/users");
  assertEquals(data!.map((u) => u.id), [svc.adminAccount.id, a.id, b.id]);
  assertEquals(data![0].createdAt, "2030-01-01T00:00:00.000Z");
});

Deno.test("createdAt is ISO 8601 in UTC with milliseconds, for a time stored with another offset", async () => {
  const svc = await service();
  await svc.sql`update users set created_at = '2026-11-25 21:07:00.123+02'`;
  const { data } = await svc.admin.GET("/api/users");
  assertEquals(data![0].createdAt, "2026-11-25T19:07:00.123Z");
});

Deno.test("one user answers with the list item's fields and the account's state", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const one = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  const list = await svc.admin.GET("/api/users");
  const { disabled, lastLoginAt, mfa, department, source, scim, ...item } = one
    .data!;
  assertEquals(item, list.data!.find((u) => u.id === account.id));
  assertEquals(source, { type: "api", id: null, name: null });
  assertEquals(scim, null);
  assertEquals(disabled, null);
  assertEquals(department, null);
  assertEquals(mfa, { totp: null, passkeys: [], recoveryCodesLeft: 0 });
  assert(typeof lastLoginAt === "string");
});

Deno.test("deleting a user answers {ok: true} and the user is gone", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const res = await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals([res.response.status, res.data], [200, { ok: true }]);
  const list = await svc.admin.GET("/api/users");
  assert(!list.data!.some((u) => u.id === account.id));
  const again = await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals([again.response.status, again.error], [404, {
    error: "User not found",
  }]);
  assertEquals(
    (await svc.client().login(account.username, "whatever")).status,
    401,
  );
});

Deno.test("an admin cannot delete their own account, and nothing is deleted; another admin may", async () => {
  const svc = await service();
  const { client: self, account } = await svc.userClient("admin");
  const res = await self.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals([res.response.status, res.error], [400, {
    error: "You cannot delete your own account",
  }]);
  assertEquals((await self.me()).status, 200);
  const gone = await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  assertEquals(gone.response.status, 200);
  assertEquals((await self.me()).status, 401);
});

Deno.test("a deleted user's username and e-mail can be used again", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer", {
    username: "reuse",
    email: "reuse@x.io",
  });
  await svc.admin.DELETE("/api/users/{id}", {
    params: { path: { id: account.id } },
  });
  const again = await svc.admin.POST("/api/users", {
    body: {
      username: "REUSE",
      name: "R",
      email: "reuse@x.io",
      password: "password-9",
      role: "viewer",
    },
  });
  assertEquals(again.response.status, 201);
  assert(again.data!.id !== account.id);
});
