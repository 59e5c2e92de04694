/**
 * GET /api/users?sort=: each order walked page by page (limit=2) through
 * the typed client's `next` links, against the order the test computes
 * from the users themselves; with filters, `include=state`, a caller
 * limited to a group, the export; the ETag by order; a cursor of another
 * order and a bad order refused; the order by last sign-in and how a sign-in
 * moves it; and the store's walk by username meeting
 * users whose canonical key an older release left unwritten.
 */
import type { User, UserListItem } from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import {
  loginCookie,
  migratedDatabaseUrl,
  sharedService,
  type TestService,
} from "./support/service.ts";
import { dataOf } from "./delegation_support.ts";
import postgres from "postgres";
import { createStore } from "../src/db/store.ts";
import { seedUsers } from "./support/users.ts";

const service = sharedService({}, { bcryptCost: 4 });

/** The orders the test computes from the users' own fields. */
const SORTS = ["createdAt", "-createdAt", "username", "-username"] as const;
type Sort = typeof SORTS[number];
/** Every order the list takes. */
const ALL_SORTS = [...SORTS, "lastLoginAt", "-lastLoginAt"] as const;

/** Names whose creation order is not their order by name, case and accents included. */
const NAMES = ["mia", "Ann", "zed", "bob", "Émile", "Carl", "al"];

/** The canonical key of these names (NFKC, lower case: what case folding makes of them). */
const keyOf = (username: string) => username.normalize("NFKC").toLowerCase();

/** Code point order, as the database's byte order of UTF-8 compares. */
const byCodePoint = (a: string, b: string) => {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
};

/** `users` in `sort`, computed here from their fields. */
function expected<
  U extends { id: number; username: string; createdAt: string },
>(
  users: U[],
  sort: Sort,
): U[] {
  const sign = sort.startsWith("-") ? -1 : 1;
  return [...users].sort((a, b) =>
    sign *
    (sort.endsWith("username")
      ? byCodePoint(keyOf(a.username), keyOf(b.username)) || a.id - b.id
      : a.createdAt.localeCompare(b.createdAt) || a.id - b.id)
  );
}

async function create(svc: TestService, username: string, role = "viewer") {
  return await dataOf(svc.admin.post("/api/users", {
    body: {
      username,
      name: `Name of ${username}`,
      email: `${username.normalize("NFD").replace(/\p{M}/gu, "")}${
        crypto.randomUUID().slice(0, 8)
      }@example.com`,
      password: "password-123",
      role: role as "viewer" | "admin",
    },
  }));
}

/** Every user of `query` in pages of two, by the typed client's `next` links. */
async function walked(
  client: TestService["admin"],
  query: Parameters<TestService["admin"]["users"]>[0],
): Promise<User[]> {
  const seen: User[] = [];
  for await (const u of client.users(query, 2)) seen.push(u);
  return seen;
}

const usernames = (users: { username: string }[]) =>
  users.map((u) => u.username);

Deno.test("each sort orders the whole list, page by page and unpaged, with filters and include=state", async () => {
  const svc = await service();
  for (const name of NAMES) await create(svc, name);
  await create(svc, "Zara", "admin");
  const everyone = await dataOf(svc.admin.get("/api/users"));
  assert(everyone.length >= NAMES.length + 2);
  for (const sort of SORTS) {
    const want = usernames(expected(everyone, sort));
    assertEquals(usernames(await walked(svc.admin, { sort })), want, sort);
    // Unpaged (streamed) and as one page, the same order.
    assertEquals(
      usernames(
        await dataOf(svc.admin.get("/api/users", {
          params: { query: { sort } },
        })),
      ),
      want,
      `${sort}, unpaged`,
    );
    // Filters keep the order of what they match.
    const viewers = everyone.filter((u) => u.role === "viewer");
    assertEquals(
      usernames(await walked(svc.admin, { sort, role: "viewer" })),
      usernames(expected(viewers, sort)),
      `${sort}, role=viewer`,
    );
    // Username, name or e-mail, in lower case.
    const found = everyone.filter((u) =>
      [u.username, u.name, u.email].some((t) => keyOf(t).includes("mi"))
    );
    assert(found.length >= 2 && found.length < everyone.length);
    assertEquals(
      usernames(await walked(svc.admin, { sort, q: "MI" })),
      usernames(expected(found, sort)),
      `${sort}, q=MI`,
    );
    assertEquals(
      usernames(await walked(svc.admin, { sort, status: "active" })),
      want,
      `${sort}, status=active`,
    );
    const stated = await walked(svc.admin, { sort, include: "state" });
    assertEquals(usernames(stated), want, `${sort}, include=state`);
    assert(stated.every((u) => "lastLoginAt" in u), "items with their state");
  }
  // Without sort: oldest first, as before.
  assertEquals(
    usernames(await walked(svc.admin, {})),
    usernames(expected(everyone, "createdAt")),
  );
});

Deno.test("the next link carries the sort; a cursor of another sort and a bad sort answer 400", async () => {
  const svc = await service();
  for (const name of ["p1", "p2", "p3"]) await create(svc, name);
  for (const sort of ALL_SORTS) {
    const res = await svc.adminFetch(`/api/users?limit=1&sort=${sort}`);
    assertEquals(res.status, 200);
    await res.body?.cancel();
    const link = /^<([^>]*)>; rel="next"$/.exec(res.headers.get("link")!)!;
    const next = new URL(link[1], "http://x");
    assertEquals(
      next.searchParams.get("sort"),
      sort === "createdAt" ? null : sort,
      sort,
    );
    const cursor = next.searchParams.get("after")!;
    for (const other of ALL_SORTS.filter((s) => s !== sort)) {
      const refused = await svc.adminFetch(
        `/api/users?limit=1&sort=${other}&after=${cursor}`,
      );
      assertEquals(
        [refused.status, await refused.json()],
        [400, { error: "Invalid query parameter: after" }],
        `${sort}'s cursor with sort=${other}`,
      );
    }
    // Unpaged too: the cursor names an order.
    const unpaged = await svc.adminFetch(
      `/api/users?sort=${
        sort === "username" ? "-username" : "username"
      }&after=${cursor}`,
    );
    assertEquals(unpaged.status, 400);
    await unpaged.body?.cancel();
  }
  for (
    const bad of [
      "",
      "created",
      "name",
      "-",
      "USERNAME",
      "lastLogin",
      "--lastLoginAt",
    ]
  ) {
    const res = await svc.adminFetch(`/api/users?sort=${bad}`);
    assertEquals(
      [res.status, await res.json()],
      [400, { error: "Invalid query parameter: sort" }],
      bad,
    );
  }
  const twice = await svc.adminFetch("/api/users?sort=username&sort=username");
  assertEquals(twice.status, 400);
  await twice.body?.cancel();
});

/** A cursor as the service writes one: `<sort>:<id>[:<key>]`, URL-safe base64. */
const cursorOf = (text: string) =>
  btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");

Deno.test("by last sign-in: latest or longest ago first, people who never signed in after the rest, page by page; a sign-in moves its user", async () => {
  const svc = await service();
  const tag = `ll${crypto.randomUUID().slice(0, 6)}`;
  const users: User[] = [];
  for (const name of ["a", "b", "c", "d", "e", "f", "g"]) {
    users.push(await create(svc, `${tag}-${name}`));
  }
  // Signed in in an order that is not creation's, a few milliseconds apart
  // so the JSON's milliseconds order them as the database does.
  const signIns = [users[3], users[0], users[4], users[1]];
  for (const u of signIns) {
    await loginCookie(svc, { username: u.username, password: "password-123" });
    await new Promise((r) => setTimeout(r, 5));
  }
  const never = users.filter((u) => !signIns.includes(u));
  const byId = (xs: typeof users, sign: number) =>
    [...xs].sort((a, b) => sign * (a.id - b.id));
  const want = {
    lastLoginAt: [...signIns, ...byId(never, 1)],
    "-lastLoginAt": [...signIns.toReversed(), ...byId(never, -1)],
  };
  for (const [sort, order] of Object.entries(want)) {
    for (const limit of [1, 2, 4, 1000]) {
      const seen: UserListItem[] = [];
      for await (
        const u of svc.admin.users(
          { sort: sort as "lastLoginAt", q: tag, include: "state" },
          limit,
        )
      ) seen.push(u);
      assertEquals(
        usernames(seen),
        usernames(order),
        `${sort}, limit=${limit}`,
      );
      assertEquals(
        seen.map((u) => u.lastLoginAt === null),
        order.map((u) => never.includes(u)),
        `${sort}: who signed in`,
      );
    }
    // Unpaged (streamed), and the export, in the same order.
    assertEquals(
      usernames(
        await dataOf(svc.admin.get("/api/users", {
          params: { query: { sort: sort as "lastLoginAt", q: tag } },
        })),
      ),
      usernames(order),
      `${sort}, unpaged`,
    );
    const exported = await svc.adminFetch(
      `/api/users/export?sort=${sort}&q=${tag}`,
    );
    assertEquals(exported.status, 200);
    assertEquals(
      (await exported.text()).trim().split("\n").map((l) =>
        JSON.parse(l).username
      ),
      usernames(order),
      `export ${sort}`,
    );
  }
  // Someone who never signed in signs in: they lead the latest first.
  await loginCookie(svc, {
    username: never[1].username,
    password: "password-123",
  });
  const [latest] = await dataOf(svc.admin.get("/api/users", {
    params: { query: { sort: "-lastLoginAt", q: tag, limit: 1 } },
  }));
  assertEquals(latest.username, never[1].username);
  // A cursor's time must be a number; a user who never signed in has none.
  for (const text of ["lastLoginAt:1:soon", "-lastLoginAt:1:1.5"]) {
    const res = await svc.adminFetch(
      `/api/users?sort=${text.split(":")[0]}&after=${cursorOf(text)}`,
    );
    assertEquals(
      [res.status, await res.json()],
      [400, { error: "Invalid query parameter: after" }],
      text,
    );
  }
  const past = await svc.adminFetch(
    `/api/users?sort=lastLoginAt&q=${tag}&after=${
      cursorOf(`lastLoginAt:${never[0].id}`)
    }`,
  );
  assertEquals(past.status, 200);
  assertEquals(
    usernames(await past.json()),
    // never[1] has signed in since.
    usernames([never[2]]),
    "after a user who never signed in: the rest of them, by id",
  );
});

Deno.test("the list's ETag differs by sort, and sort=createdAt is the list without sort", async () => {
  const svc = await service();
  await create(svc, "tagged");
  const tagOf = async (query: string) => {
    const res = await svc.adminFetch(`/api/users${query}`);
    assertEquals(res.status, 200);
    await res.body?.cancel();
    return res.headers.get("etag")!;
  };
  for (const paged of ["", "limit=2&"]) {
    const tags = await Promise.all(
      ALL_SORTS.map((s) => tagOf(`?${paged}sort=${s}`)),
    );
    assertEquals(new Set(tags).size, ALL_SORTS.length, paged);
    assertEquals(tags[0], await tagOf(paged ? "?limit=2" : ""));
    const again = await svc.adminFetch(`/api/users?${paged}sort=username`, {
      headers: { "if-none-match": tags[2] },
    });
    assertEquals(again.status, 304);
    const other = await svc.adminFetch(`/api/users?${paged}sort=-username`, {
      headers: { "if-none-match": tags[2] },
    });
    assertEquals(other.status, 200);
    await other.body?.cancel();
  }
});

Deno.test("a caller limited to a group walks its members in each sort; the export takes the sort", async () => {
  const svc = await service();
  const members = [];
  for (const name of ["ute", "Bea", "kai", "Öz", "dan"]) {
    members.push(await create(svc, name));
  }
  await create(svc, "aaron-outside");
  const { id: roleId } = await dataOf(svc.admin.post("/api/roles", {
    body: {
      name: `reader ${crypto.randomUUID()}`,
      permissions: ["users:read", "users:export"],
    },
  }));
  const { id: groupId } = await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: `Region ${crypto.randomUUID()}` },
  }));
  await dataOf(svc.admin.post("/api/groups/{id}/members", {
    params: { path: { id: groupId } },
    body: { userIds: members.map((m) => m.id) },
  }));
  const lead = await svc.userClient("viewer");
  await dataOf(svc.admin.post("/api/assignments", {
    body: { roleId, userId: lead.account.id, reachGroupId: groupId },
  }));
  for (const sort of SORTS) {
    assertEquals(
      usernames(await walked(lead.client, { sort })),
      usernames(expected(members, sort)),
      sort,
    );
  }
  const everyone = await dataOf(svc.admin.get("/api/users"));
  for (const sort of ["-username", "-createdAt"] as const) {
    const res = await svc.adminFetch(`/api/users/export?sort=${sort}`);
    assertEquals(res.status, 200);
    const lines = (await res.text()).trim().split("\n").map((l) =>
      JSON.parse(l).username
    );
    assertEquals(lines, usernames(expected(everyone, sort)), `export ${sort}`);
  }
  const bad = await svc.adminFetch("/api/users/export?sort=name");
  assertEquals(
    [bad.status, await bad.json()],
    [400, { error: "Invalid query parameter: sort" }],
  );
});

Deno.test("by username, users whose canonical key is not written yet come after the rest (before, reversed), and a walk meets each once", async () => {
  await using database = await migratedDatabaseUrl();
  const sql = postgres(database.url, { max: 1, onnotice: () => {} });
  const store = createStore(sql);
  try {
    // Keyed users, and rows as an older release writes them: no fold.
    await sql`
      insert into users (username, username_key, username_fold, name,
        name_key, email, email_key, email_fold, role, password_hash)
      select u, u, u, u, u, u || '@example.com', u || '@example.com',
        u || '@example.com', 'viewer', 'x'
      from unnest(array['keyed-b', 'keyed-a', 'keyed-c']) u`;
    await seedUsers(sql, 3, "unkeyed");
    const rows = await sql<{ id: number; username: string }[]>`
      select id, username, username_fold from users order by id`;
    const keyed = ["keyed-a", "keyed-b", "keyed-c"];
    const unkeyed = rows.filter((r) => r.username.startsWith("unkeyed"))
      .map((r) => r.username);
    const order = {
      username: [...keyed, ...unkeyed],
      "-username": [...unkeyed.toReversed(), ...keyed.toReversed()],
    };
    for (const [sort, want] of Object.entries(order)) {
      for (const limit of [1, 2, 4, 10]) {
        const seen: string[] = [];
        let after;
        do {
          const page = await store.users.listPage(
            {},
            after,
            limit,
            "user",
            sort as "username" | "-username",
          );
          seen.push(...page.rows.map((r) => JSON.parse(r).username));
          after = page.next;
          assert(seen.length <= want.length, `${sort} limit ${limit}: ${seen}`);
        } while (after);
        assertEquals(seen, want, `${sort}, limit=${limit}`);
      }
      const streamed = (await Array.fromAsync(
        store.users.listJson({}, undefined, 2, "user", sort as "username"),
      )).flatMap((batch) =>
        JSON.parse(`[${batch}]`).map((u: User) => u.username)
      );
      assertEquals(streamed, want, `${sort}, streamed`);
    }
  } finally {
    await store.stop();
    await sql.end();
  }
});
