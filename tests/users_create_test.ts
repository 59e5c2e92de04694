import type { CreateUser } from "@user-admin/client";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import {
  sharedService,
  startService,
  type TestService,
  userCount,
} from "./support/service.ts";

// bcrypt's cheapest cost: its work is not this file's subject. The test of
// the stored hash has a service of its own, at the default cost.
const service = sharedService({}, { bcryptCost: 4 });

const valid = (over: Record<string, unknown> = {}) => ({
  username: "alice",
  name: "Alice Example",
  email: "alice@example.com",
  password: "correct horse",
  role: "viewer",
  ...over,
});

/** POSTs any JSON value (or raw text) as the admin; answers status and body. */
async function post(svc: TestService, body: unknown, init: RequestInit = {}) {
  const res = await svc.adminFetch("/api/users", {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

Deno.test("creating a user answers 201 with the user and its Location, and the list shows it", async () => {
  const svc = await service();
  const { data, response } = await svc.admin.POST("/api/users", {
    body: valid() as CreateUser,
  });
  assertEquals(response.status, 201);
  assert(data);
  assertEquals(Object.keys(data).sort(), [
    "createdAt",
    "email",
    "id",
    "name",
    "role",
    "username",
  ]);
  assertEquals(
    { ...data, id: 0, createdAt: "" },
    {
      id: 0,
      username: "alice",
      name: "Alice Example",
      email: "alice@example.com",
      role: "viewer",
      createdAt: "",
    },
  );
  assertMatch(data.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert(Math.abs(Date.parse(data.createdAt) - Date.now()) < 60_000);
  assertEquals(response.headers.get("location"), `/api/users/${data.id}`);
  const list = await svc.admin.GET("/api/users");
  assertEquals(list.data!.at(-1), data);
});

Deno.test("the password is stored only as a bcrypt hash of cost 10, and the new user can log in with it", async () => {
  await using svc = await startService();
  const { data } = await svc.admin.POST("/api/users", {
    body: valid() as CreateUser,
  });
  const [row] = await svc.sql<
    { password_hash: string }[]
  >`select password_hash from users where id = ${data!.id}`;
  assertMatch(row.password_hash, /^\$2b\$10\$.{53}$/);
  assert(!row.password_hash.includes("correct horse"));
  assertEquals(
    (await svc.client().login("alice", "correct horse")).status,
    200,
  );
});

Deno.test("check 1: any field missing, empty, whitespace, null or not a string answers 400 All fields are required", async () => {
  const svc = await service();
  const fields = ["username", "name", "email", "password", "role"];
  for (const field of fields) {
    const blanks: unknown[] = [undefined, "", null];
    if (field !== "password" && field !== "role") blanks.push("   ", "\t\n");
    if (field !== "role") blanks.push(5, true, ["a"], { a: 1 });
    for (const blank of blanks) {
      const body: Record<string, unknown> = valid();
      if (blank === undefined) delete body[field];
      else body[field] = blank;
      const res = await post(svc, body);
      assertEquals(res, {
        ...res,
        status: 400,
        body: { error: "All fields are required" },
      }, `${field}=${JSON.stringify(blank)}`);
    }
  }
  for (const body of [{}, [], [valid()], "null", "42", '"text"']) {
    const res = await post(svc, body);
    assertEquals([res.status, res.body], [400, {
      error: "All fields are required",
    }], JSON.stringify(body));
  }
  assertEquals(await userCount(svc), 1);
});

Deno.test("check 2: a role other than admin or viewer answers 400 Role must be admin or viewer", async () => {
  const svc = await service();
  for (
    const role of ["superuser", "Admin", "VIEWER", " admin", " ", 1, true, [
      "admin",
    ], { admin: 1 }]
  ) {
    const res = await post(svc, valid({ role }));
    assertEquals([res.status, res.body], [400, {
      error: "Role must be admin or viewer",
    }], JSON.stringify(role));
  }
  assertEquals(await userCount(svc), 1);
});

Deno.test("check 3: a password under 8 characters answers 400, counting characters, not bytes or UTF-16 units", async () => {
  const svc = await service();
  for (
    const password of ["1234567", "a", "ééééééé", "😀😀😀😀😀😀😀", "       "]
  ) {
    const res = await post(svc, valid({ password }));
    assertEquals([res.status, res.body], [400, {
      error: "Password must be at least 8 characters",
    }], password);
  }
  const spaces = await post(
    svc,
    valid({ username: "s1", email: "s1@x.io", password: "        " }),
  );
  assertEquals(
    spaces.status,
    201,
    "a password of 8 spaces is a password: never trimmed",
  );
  const emoji = await post(
    svc,
    valid({ username: "s2", email: "s2@x.io", password: "😀😀😀😀😀😀😀😀" }),
  );
  assertEquals(emoji.status, 201);
  assertEquals(
    (await svc.client().login("s2", "😀😀😀😀😀😀😀😀")).status,
    200,
  );
});

Deno.test("the checks run in the contract's order: fields, then role, then password length, then limits, then uniqueness", async () => {
  const svc = await service();
  const cases: [Record<string, unknown>, string][] = [
    [
      { username: "", role: "nope", password: "short" },
      "All fields are required",
    ],
    [{ role: 7, email: null }, "All fields are required"],
    [{ role: "nope", password: "short" }, "Role must be admin or viewer"],
    [
      { role: "nope", username: "x".repeat(65) },
      "Role must be admin or viewer",
    ],
    [
      { password: "short", username: "x".repeat(65) },
      "Password must be at least 8 characters",
    ],
    [
      { username: "x".repeat(65), name: "n".repeat(201) },
      "Username must be at most 64 characters without control characters",
    ],
    [
      { name: "n".repeat(201), email: "bad" },
      "Name must be at most 200 characters",
    ],
    [
      { email: "bad", password: "p".repeat(73) },
      "Email must be a valid address",
    ],
    [
      { username: "admin", password: "p".repeat(73) },
      "Password must be at most 72 bytes",
    ],
    [
      { username: "x".repeat(65), email: "admin@localhost" },
      "Username must be at most 64 characters without control characters",
    ],
  ];
  for (const [over, error] of cases) {
    const res = await post(svc, valid(over));
    assertEquals(res.body, { error }, JSON.stringify(over));
    assertEquals(res.status, 400);
  }
  const dup = await post(svc, valid({ username: "admin" }));
  assertEquals([dup.status, dup.body], [409, {
    error: "Username or email already exists",
  }]);
});

Deno.test("username: at most 64 characters and no control characters; counted in code points", async () => {
  const svc = await service();
  const bad = [
    "u".repeat(65),
    "é".repeat(65),
    "bad\u0000name",
    "new\nline",
    "tab\tname",
    "del\u007f",
    "c1\u0085",
  ];
  for (const username of bad) {
    const res = await post(svc, valid({ username }));
    assertEquals(res.body, {
      error:
        "Username must be at most 64 characters without control characters",
    }, JSON.stringify(username));
  }
  const ok = await post(
    svc,
    valid({ username: "😀".repeat(64), email: "e1@x.io" }),
  );
  assertEquals(ok.status, 201);
  const inner = await post(
    svc,
    valid({ username: "first last", email: "e2@x.io" }),
  );
  assertEquals(inner.status, 201, "inner spaces are fine");
});

Deno.test("name: at most 200 characters", async () => {
  const svc = await service();
  assertEquals((await post(svc, valid({ name: "n".repeat(201) }))).body, {
    error: "Name must be at most 200 characters",
  });
  assertEquals((await post(svc, valid({ name: "ñ".repeat(200) }))).status, 201);
});

Deno.test("email: at most 254 characters, one @ with text on both sides, no whitespace", async () => {
  const svc = await service();
  const bad = [
    "plain",
    "@x.io",
    "a@",
    "a@@x.io",
    "a@b@x.io",
    "a b@x.io",
    "a@x .io",
    "a\u00a0b@x.io",
    `${"a".repeat(250)}@x.io`,
  ];
  for (const email of bad) {
    const res = await post(svc, valid({ email }));
    assertEquals([res.status, res.body], [400, {
      error: "Email must be a valid address",
    }], email);
  }
  assertEquals(
    (await post(svc, valid({ email: `${"a".repeat(249)}@x.io` }))).status,
    201,
  );
});

Deno.test("password: at most 72 bytes as UTF-8, never silently truncated", async () => {
  const svc = await service();
  const tooLong = ["p".repeat(73), "é".repeat(37), "😀".repeat(19)];
  for (const password of tooLong) {
    const res = await post(svc, valid({ password }));
    assertEquals([res.status, res.body], [400, {
      error: "Password must be at most 72 bytes",
    }], `${password.length}`);
  }
  const exact = "p".repeat(71) + "q";
  assertEquals((await post(svc, valid({ password: exact }))).status, 201);
  assertEquals((await svc.client().login("alice", exact)).status, 200);
  assertEquals((await svc.client().login("alice", "p".repeat(72))).status, 401);
});

Deno.test("username, name and email are trimmed; password and role are not", async () => {
  const svc = await service();
  const res = await post(
    svc,
    valid({
      username: "  Bob ",
      name: "\tBob B\n",
      email: " bob@x.io ",
      password: " secret pass ",
    }),
  );
  assertEquals(res.status, 201);
  assertEquals([res.body.username, res.body.name, res.body.email], [
    "Bob",
    "Bob B",
    "bob@x.io",
  ]);
  assertEquals((await svc.client().login("bob", " secret pass ")).status, 200);
  assertEquals((await svc.client().login("bob", "secret pass")).status, 401);
  assertEquals((await post(svc, valid({ role: "viewer " }))).body, {
    error: "Role must be admin or viewer",
  });
});

Deno.test("409 when the username or the e-mail is taken, in any case; values are stored as given", async () => {
  const svc = await service();
  assertEquals(
    (await post(svc, valid({ username: "Alice", email: "Alice@Example.com" })))
      .status,
    201,
  );
  for (
    const over of [{ username: "alice" }, {
      username: "ALICE",
      email: "new@x.io",
    }, { username: "other", email: "alice@example.COM" }]
  ) {
    const res = await post(svc, valid(over));
    assertEquals([res.status, res.body], [409, {
      error: "Username or email already exists",
    }], JSON.stringify(over));
  }
  const list = await svc.admin.GET("/api/users");
  assertEquals(list.data!.map((u) => u.username), ["admin", "Alice"]);
  assertEquals(list.data![1].email, "Alice@Example.com");
});

Deno.test("an unparseable body answers 500 Failed to create user and creates nothing", async () => {
  const svc = await service();
  for (const body of ["not json", "{", '{"username": "a",}', "", "\u0000"]) {
    const res = await post(svc, body);
    assertEquals([res.status, res.body], [500, {
      error: "Failed to create user",
    }], JSON.stringify(body));
  }
  const invalidUtf8 = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
  const res = await svc.adminFetch("/api/users", {
    method: "POST",
    body: invalidUtf8,
  });
  assertEquals([res.status, await res.json()], [500, {
    error: "Failed to create user",
  }]);
  assertEquals(await userCount(svc), 1);
});

Deno.test("the body is read as JSON whatever the Content-Type says, or without one", async () => {
  const svc = await service();
  const types = [
    undefined,
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/json; charset=utf-8",
    "nonsense",
  ];
  for (const [i, type] of types.entries()) {
    const body = new TextEncoder().encode(
      JSON.stringify(valid({ username: `ct${i}`, email: `ct${i}@x.io` })),
    );
    const res = await svc.adminFetch("/api/users", {
      method: "POST",
      headers: type ? { "content-type": type } : {},
      body,
    });
    assertEquals(res.status, 201, String(type));
    await res.body?.cancel();
  }
});

Deno.test("unknown fields are ignored: no way to set id, createdAt, the hash or anything else", async () => {
  const svc = await service();
  const res = await post(
    svc,
    valid({
      id: 999,
      createdAt: "2000-01-01T00:00:00.000Z",
      password_hash: "$2b$10$" + "x".repeat(53),
      passwordHash: "x",
      isRoot: true,
    }),
  );
  assertEquals(res.status, 201);
  assert(res.body.id !== 999);
  assert(!res.body.createdAt.startsWith("2000"));
  assertEquals(Object.keys(res.body).length, 6);
  assertEquals(
    (await svc.client().login("alice", "correct horse")).status,
    200,
  );
});

Deno.test("a body over 64 KiB answers 413 Request body too large", async () => {
  const svc = await service();
  const res = await post(svc, valid({ name: "n".repeat(65 * 1024) }));
  assertEquals([res.status, res.body], [413, {
    error: "Request body too large",
  }]);
  const fits = await post(svc, valid({ padding: "p".repeat(60 * 1024) }));
  assertEquals(fits.status, 201);
});
