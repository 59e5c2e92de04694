/**
 * GET /api/users with its optional parameters: pages that follow `next`
 * links, filters, exact lookups under the canonical key, and a 400 for each
 * bad value, after 401/403.
 */
import type { User } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import { seedUsers } from "./support/users.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const NEXT = /^<(\/api\/users\?[^>]*)>; rel="next"$/;

/** Walks the pages of `query` by their `next` links; answers each page. */
async function walk(svc: TestService, query: string) {
  const pages: User[][] = [];
  let path: string | undefined = `/api/users?${query}`;
  while (path) {
    const res = await svc.adminFetch(path);
    assertEquals(res.status, 200, path);
    pages.push(await res.json());
    const link = res.headers.get("link");
    path = link ? NEXT.exec(link)?.[1] : undefined;
    if (link) assert(path, `not a next link: ${link}`);
    assert(pages.length < 1000, "the walk does not end");
  }
  return pages;
}

const ids = (users: User[]) => users.map((u) => u.id);

async function create(
  svc: TestService,
  username: string,
  fields: Partial<{ name: string; email: string; role: "admin" | "viewer" }> =
    {},
) {
  const created = await svc.admin.POST("/api/users", {
    body: {
      username,
      name: fields.name ?? `Name of ${username}`,
      email: fields.email ?? `${username}@example.com`,
      password: "password-123",
      role: fields.role ?? "viewer",
    },
  });
  assertEquals(created.response.status, 201, username);
  return created.data!;
}

Deno.test("a page walk by next links returns the full list, page by page, with no user twice", async () => {
  const svc = await service();
  await seedUsers(svc.sql, 123);
  const full = (await svc.admin.GET("/api/users")).data!;
  assertEquals(full.length, 124);
  for (const limit of [1, 7, 50, 124, 1000]) {
    const pages = await walk(svc, `limit=${limit}`);
    assertEquals(pages.length, Math.ceil(124 / limit), `limit=${limit}`);
    assert(pages.every((p) => p.length <= limit && p.length > 0));
    assertEquals(pages.flat(), full, `limit=${limit}`);
  }
  // The last page has no next link; a full page at the very end neither.
  const last = await svc.adminFetch("/api/users?limit=124");
  assertEquals(last.headers.get("link"), null);
  await last.body?.cancel();
});

Deno.test("a page walk while users are being created sees every user that existed before it, once each, in order", async () => {
  const svc = await service();
  await seedUsers(svc.sql, 60);
  const before = ids((await svc.admin.GET("/api/users")).data!);
  let walking = true;
  let made = 0;
  const creating = (async () => {
    while (walking) {
      await seedUsers(svc.sql, 3, `during${made++}x`);
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const seen: number[] = [];
  let pages = 0;
  try {
    let path: string | undefined = "/api/users?limit=5";
    while (path) {
      const res = await svc.adminFetch(path);
      assertEquals(res.status, 200);
      const page = ids(await res.json());
      assert(page.length <= 5, `a page of ${page.length}`);
      seen.push(...page);
      pages++;
      const link = res.headers.get("link");
      path = link ? NEXT.exec(link)?.[1] : undefined;
      // Stop once well past the users that existed, or it may chase creations.
      if (seen.length > before.length + 60) break;
    }
  } finally {
    walking = false;
    await creating;
  }
  assert(made > 0, "users were created during the walk");
  assert(pages > before.length / 5, `${pages} pages`);
  assertEquals(new Set(seen).size, seen.length, "no user twice");
  for (const id of before) assert(seen.includes(id), `user ${id} missed`);
  const full = (await svc.admin.GET("/api/users")).data!;
  const order = ids(full);
  assertEquals(
    seen,
    order.filter((id) => seen.includes(id)),
    "in list order",
  );
});

Deno.test("role, q, username and email filter the list, combine, and keep the list's item shape", async () => {
  const svc = await service();
  const alice = await create(svc, "Alice", {
    name: "Alice Liddell",
    email: "Alice@Example.com",
    role: "admin",
  });
  const bob = await create(svc, "bob", {
    name: "Bob 100%_sure",
    email: "bob@example.org",
  });
  const carol = await create(svc, "carol", {
    name: "Carol Ali",
    email: "carol@example.net",
  });
  const admin = svc.adminAccount;
  const get = async (query: Record<string, string>) => {
    const res = await svc.admin.GET("/api/users", {
      params: { query },
    });
    assertEquals(res.response.status, 200, JSON.stringify(query));
    return ids(res.data!);
  };
  assertEquals(await get({ role: "admin" }), [admin.id, alice.id]);
  assertEquals(await get({ role: "viewer" }), [bob.id, carol.id]);
  // Contains, in username, name or e-mail, in any case or width.
  assertEquals(await get({ q: "ali" }), [alice.id, carol.id]);
  assertEquals(await get({ q: "ＡＬＩ" }), [alice.id, carol.id]);
  assertEquals(await get({ q: "example.org" }), [bob.id]);
  assertEquals(await get({ q: "LIDDELL" }), [alice.id]);
  // LIKE's wildcards are plain characters here.
  assertEquals(await get({ q: "%" }), [bob.id]);
  assertEquals(await get({ q: "0%_s" }), [bob.id]);
  assertEquals(await get({ q: "_" }), [bob.id]);
  assertEquals(await get({ q: "zzz" }), []);
  // Exact lookups under the canonical key: zero or one user.
  assertEquals(await get({ username: "alice" }), [alice.id]);
  assertEquals(await get({ username: "ＡＬＩＣＥ" }), [alice.id]);
  assertEquals(await get({ username: "ali" }), []);
  assertEquals(await get({ email: "alice@example.com" }), [alice.id]);
  assertEquals(await get({ email: "BOB@EXAMPLE.ORG" }), [bob.id]);
  assertEquals(await get({ email: "nobody@example.com" }), []);
  // Combined: all must hold.
  assertEquals(await get({ q: "ali", role: "viewer" }), [carol.id]);
  assertEquals(await get({ username: "alice", role: "viewer" }), []);
  // Unknown parameters are ignored.
  assertEquals((await get({ order: "name", page: "2" })).length, 4);

  const one = await svc.admin.GET("/api/users", {
    params: { query: { username: "BOB" } },
  });
  // The list's item: the detail without the account's state, factors, origin and profile.
  const {
    disabled: _,
    lastLoginAt: __,
    mfa: ___,
    department: ____,
    source: _____,
    scim: ______,
    ...item
  } = (await svc
    .admin.GET(
      "/api/users/{id}",
      { params: { path: { id: bob.id } } },
    )).data!;
  assertEquals(one.data, [item]);
});

Deno.test("filters page like the full list, and the next link keeps them", async () => {
  const svc = await service();
  await seedUsers(svc.sql, 30, "even");
  await seedUsers(svc.sql, 30, "odd");
  const pages = await walk(svc, "q=EVEN&limit=4");
  assertEquals(pages.length, 8);
  const names = pages.flat().map((u) => u.username);
  assertEquals(names, Array.from({ length: 30 }, (_, i) => `even${i + 1}`));
  const first = await svc.adminFetch("/api/users?q=EVEN&limit=4&role=viewer");
  const link = first.headers.get("link")!;
  await first.body?.cancel();
  const next = new URL(NEXT.exec(link)![1], svc.baseUrl);
  assertEquals(next.searchParams.get("q"), "EVEN");
  assertEquals(next.searchParams.get("role"), "viewer");
  assertEquals(next.searchParams.get("limit"), "4");
  assert(next.searchParams.get("after"));
});

Deno.test("each bad query parameter answers 400 Invalid query parameter: <name>, after 401 and 403", async () => {
  const svc = await service();
  const bad: [string, string][] = [
    ["limit=0", "limit"],
    ["limit=1001", "limit"],
    ["limit=-1", "limit"],
    ["limit=1.5", "limit"],
    ["limit=abc", "limit"],
    ["limit=", "limit"],
    ["limit=10&limit=20", "limit"],
    ["after=", "after"],
    ["after=not-a-cursor", "after"],
    ["after=" + btoa("1.2.3"), "after"],
    ["role=superuser", "role"],
    ["role=Admin", "role"],
    ["role=", "role"],
    ["q=", "q"],
    ["q=" + "x".repeat(101), "q"],
    ["q=a%00b", "q"],
    ["username=", "username"],
    ["username=a%00", "username"],
    ["email=", "email"],
    ["email=" + "e".repeat(255), "email"],
  ];
  for (const [query, name] of bad) {
    const res = await svc.adminFetch(`/api/users?${query}`);
    assertEquals(
      [res.status, await res.json()],
      [400, { error: `Invalid query parameter: ${name}` }],
      query,
    );
  }
  // Limits that are fine.
  for (const query of ["limit=1", "limit=1000", "q=" + "x".repeat(100)]) {
    const res = await svc.adminFetch(`/api/users?${query}`);
    assertEquals(res.status, 200, query);
    await res.body?.cancel();
  }
  // 401 and 403 come first.
  const anonymous = await svc.fetch("/api/users?limit=0");
  assertEquals([anonymous.status, await anonymous.json()], [401, {
    error: "Unauthorised",
  }]);
  const { client: viewer } = await svc.userClient("viewer");
  const forbidden = await viewer.GET("/api/users", {
    // deno-lint-ignore no-explicit-any
    params: { query: { limit: 0, role: "x" as any } },
  });
  assertEquals(forbidden.response.status, 403);
  assertEquals(forbidden.error, { error: "Forbidden" });
});

/** An `after` cursor as the service writes them: base64url of "<microseconds>.<id>". */
const cursor = (text: string) =>
  btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

Deno.test("a forged cursor naming a time the database cannot hold answers 400 Invalid query parameter: after, never 500", async () => {
  const svc = await service();
  // Microseconds before 4714-11-24 BC, PostgreSQL's first timestamp.
  for (
    const text of [
      "-999999999999999999.0",
      "-999999999999999999.1",
      "-210866803200000001.1",
    ]
  ) {
    for (const limit of ["", "&limit=2"]) {
      const query = `after=${cursor(text)}${limit}`;
      const res = await svc.adminFetch(`/api/users?${query}`);
      assertEquals(
        [res.status, await res.json()],
        [400, { error: "Invalid query parameter: after" }],
        `${text} ${query}`,
      );
    }
  }
  // The first and a far later time the database holds are positions.
  const all = ids(await (await svc.adminFetch("/api/users")).json());
  for (
    const [text, expected] of [
      ["-210866803200000000.0", all],
      ["999999999999999999.1", []],
    ] as const
  ) {
    for (const limit of ["", "&limit=1000"]) {
      const res = await svc.adminFetch(
        `/api/users?after=${cursor(text)}${limit}`,
      );
      assertEquals(res.status, 200, text);
      assertEquals(ids(await res.json()), expected, text);
    }
  }
});

Deno.test("the typed client iterates over every user by next links and finds one by username or e-mail", async () => {
  const svc = await service();
  await seedUsers(svc.sql, 45);
  const full = (await svc.admin.GET("/api/users")).data!;
  const walked: User[] = [];
  for await (const user of svc.admin.users({}, 10)) walked.push(user);
  assertEquals(walked, full);
  const viewers: string[] = [];
  for await (const u of svc.admin.users({ role: "viewer", q: "bulk4" }, 2)) {
    viewers.push(u.username);
  }
  assertEquals(viewers, [
    "bulk4",
    ...Array.from({ length: 6 }, (_, i) => `bulk${40 + i}`),
  ]);

  const found = await svc.admin.findByUsername("BULK7");
  assert(found.ok);
  assertEquals(found.data?.username, "bulk7");
  const byEmail = await svc.admin.findByEmail("Bulk8@Example.com");
  assert(byEmail.ok);
  assertEquals(byEmail.data?.username, "bulk8");
  const none = await svc.admin.findByUsername("nobody");
  assertEquals(none, { ok: true, status: 200, data: null });
  const anonymous = await svc.client().findByUsername("bulk7");
  assertEquals(anonymous, { ok: false, status: 401, error: "Unauthorised" });

  let failed: unknown;
  try {
    for await (const _ of svc.client().users()) { /* never */ }
  } catch (e) {
    failed = e;
  }
  assertEquals((failed as { status: number }).status, 401);
});
