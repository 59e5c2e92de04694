import { verify } from "@node-rs/bcrypt";
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";

// Bursts of requests on a busy machine can outlast the default request
// deadline; deadlines are faults_test's subject, not this file's. The races
// are the database's: bcrypt at its cheapest cost sends the writes closer
// together.
const service = sharedService({ REQUEST_TIMEOUT_MS: "60000" }, {
  bcryptCost: 4,
});

const body = (username: string, email = `${username}@example.com`) => ({
  username,
  name: `User ${username}`,
  email,
  password: "burst-password",
  role: "viewer" as const,
});

const statusesOf = (answers: { response: Response }[]) =>
  answers.map((a) => a.response.status);

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((t, s) => {
    t[s] = (t[s] ?? 0) + 1;
    return t;
  }, {});

Deno.test("parallel creations of one username in any case give one 201 and 409s with the contract's message, never a 5xx or a duplicate", async () => {
  const svc = await service();
  const variants = ["dup", "DUP", "Dup", "dUp", " dup "];
  const answers = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      svc.admin.POST("/api/users", {
        body: body(variants[i % variants.length], `dup${i}@example.com`),
      })),
  );
  assertEquals(tally(statusesOf(answers)), { 201: 1, 409: 11 });
  for (const a of answers) {
    if (a.error) {
      assertEquals(a.error, { error: "Username or email already exists" });
    }
  }
  // The same for one e-mail under different usernames.
  const byEmail = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      svc.admin.POST("/api/users", {
        body: body(`mail${i}`, i % 2 ? "Same@Example.com" : "same@example.com"),
      })),
  );
  assertEquals(tally(statusesOf(byEmail)), { 201: 1, 409: 11 });
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users
    where username_key = 'dup' or email_key = 'same@example.com'`;
  assertEquals(n, 2);
});

Deno.test("parallel creations of look-alikes (UTS #39 skeleton, full case folding) give one 201 and 409s", async () => {
  const svc = await service();
  const variants = [
    "scope",
    "\u0455\u0441\u043e\u0440\u0435", // all-Cyrillic ѕсоре
    "SCOPE",
    "\u0405\u0421\u041e\u0420\u0415", // all-Cyrillic capitals ЅСОРЕ
  ];
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      svc.admin.POST("/api/users", {
        body: body(variants[i % variants.length], `scope${i}@example.com`),
      })),
  );
  assertEquals(tally(statusesOf(answers)), { 201: 1, 409: 7 });
  const byEmail = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      svc.admin.POST("/api/users", {
        body: body(
          `street${i}`,
          i % 2 ? "STRASSE@example.com" : "stra\u00dfe@example.com",
        ),
      })),
  );
  assertEquals(tally(statusesOf(byEmail)), { 201: 1, 409: 7 });
  for (const a of [...answers, ...byEmail]) {
    if (a.error) {
      assertEquals(a.error, { error: "Username or email already exists" });
    }
  }
});

Deno.test("parallel creations of distinct users all succeed, with distinct ids", async () => {
  const svc = await service();
  const answers = await Promise.all(
    Array.from(
      { length: 16 },
      (_, i) => svc.admin.POST("/api/users", { body: body(`many${i}`) }),
    ),
  );
  assertEquals(tally(statusesOf(answers)), { 201: 16 });
  const ids = new Set(answers.map((a) => a.data!.id));
  assertEquals(ids.size, 16);
  const list = (await svc.admin.GET("/api/users")).data!;
  assertEquals(list.length, 17);
  // The list is ordered by creation, ties by id, whatever order commits took.
  const keys = list.map((u) => [u.createdAt, u.id] as const);
  const sorted = [...keys].sort((a, b) =>
    a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]
  );
  assertEquals(keys, sorted);
});

Deno.test("parallel deletions of one user give one 200 and 404s", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const answers = await Promise.all(
    Array.from({ length: 15 }, () =>
      svc.admin.DELETE("/api/users/{id}", {
        params: { path: { id: account.id } },
      })),
  );
  assertEquals(tally(statusesOf(answers)), { 200: 1, 404: 14 });
  for (const a of answers) {
    if (a.error) assertEquals(a.error, { error: "User not found" });
  }
});

Deno.test("parallel role changes and password resets of one user lose no update", async () => {
  const svc = await service();
  const { account } = await svc.userClient("viewer");
  const passwords = Array.from({ length: 6 }, (_, i) => `parallel-pass-${i}`);
  const patch = (change: { role?: "admin" | "viewer"; password?: string }) =>
    svc.admin.PATCH("/api/users/{id}", {
      params: { path: { id: account.id } },
      body: change,
    });
  const answers = await Promise.all([
    ...passwords.map((password) => patch({ password })),
    ...Array.from({ length: 6 }, () => patch({ role: "admin" })),
  ]);
  assertEquals(tally(statusesOf(answers)), { 200: 12 });
  const [row] = await svc.sql<{ role: string; hash: string }[]>`
    select role, password_hash as hash from users where id = ${account.id}`;
  // The role change survived every concurrent password reset...
  assertEquals(row.role, "admin");
  // ...and the stored hash is exactly one of the passwords sent, whole.
  const matches = await Promise.all(passwords.map((p) => verify(p, row.hash)));
  assertEquals(matches.filter(Boolean).length, 1);
  assertEquals(
    (await svc.client().login(account.username, "burst-password")).status,
    401,
  );
});

Deno.test("a mixed burst of creates, patches and deletes leaves the list consistent with every answer", async () => {
  const svc = await service();
  const existing = await Promise.all(
    Array.from({ length: 4 }, () => svc.userClient("viewer")),
  );
  const ids = existing.map((e) => e.account.id);
  type Op = {
    kind: string;
    id?: number;
    run: Promise<{ response: Response; data?: unknown }>;
  };
  const ops: Op[] = [];
  for (let i = 0; i < 8; i++) {
    ops.push({
      kind: "create",
      run: svc.admin.POST("/api/users", { body: body(`mixed${i % 5}`) }),
    });
  }
  for (const id of ids) {
    for (let i = 0; i < 3; i++) {
      ops.push({
        kind: "patch",
        id,
        run: svc.admin.PATCH("/api/users/{id}", {
          params: { path: { id } },
          body: { role: i % 2 ? "admin" : "viewer" },
        }),
      });
    }
  }
  for (const id of ids.slice(0, 2)) {
    for (let i = 0; i < 2; i++) {
      ops.push({
        kind: "delete",
        id,
        run: svc.admin.DELETE("/api/users/{id}", { params: { path: { id } } }),
      });
    }
  }
  // Shuffle so the kinds interleave on the wire.
  ops.sort(() => Math.random() - 0.5);
  const results = await Promise.all(
    ops.map(async (op) => ({ ...op, answer: await op.run })),
  );
  for (const r of results) {
    assert(
      r.answer.response.status < 500,
      `${r.kind} ${r.answer.response.status}`,
    );
  }
  const created = results.filter((r) =>
    r.kind === "create" && r.answer.response.status === 201
  ).map((r) => (r.answer.data as { id: number }).id);
  assertEquals(created.length, 5, "one 201 per distinct username");
  const deleted = new Set(
    results.filter((r) =>
      r.kind === "delete" && r.answer.response.status === 200
    )
      .map((r) => r.id),
  );
  assertEquals(deleted, new Set(ids.slice(0, 2)), "each deleted exactly once");
  const listed = new Set(
    (await svc.admin.GET("/api/users")).data!.map((u) => u.id),
  );
  const expected = new Set([
    svc.adminAccount.id,
    ...ids.filter((id) => !deleted.has(id)),
    ...created,
  ]);
  assertEquals(listed, expected);
  // Patches of users that were never deleted all succeeded.
  for (const r of results) {
    if (r.kind === "patch" && !deleted.has(r.id)) {
      assertEquals(r.answer.response.status, 200);
    }
    if (r.kind === "patch" && deleted.has(r.id)) {
      assert([200, 404].includes(r.answer.response.status));
    }
  }
});
