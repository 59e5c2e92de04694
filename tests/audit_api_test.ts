/**
 * GET /api/audit: admins only, newest first, pages linked by `next`, the
 * filters, the 400 of each bad parameter, its own 500; and no record ever
 * holds a password, a hash or a session token.
 */
import {
  AuditPageError,
  auditPages,
  type AuditRecord,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import {
  ADMIN,
  loginCookie,
  startService as startOwnService,
  type TestService,
} from "./support/service.ts";
import { writeRecords } from "./audit_support.ts";

/**
 * A service of the test's own, bcrypt at its cheapest cost: its work is
 * not this file's subject.
 */
const startService = (env: Record<string, string> = {}) =>
  startOwnService(env, { bcryptCost: 4 });

/** The first admin's record, the harness's login and 35 of every kind: 37 in all. */
const TOTAL = 37;
/** What startService leaves: admin.bootstrapped and one login.succeeded. */
const AT_START = 2;

async function seeded() {
  const svc = await startService();
  await writeRecords(svc.store, TOTAL - AT_START);
  return svc;
}

async function getJson(svc: TestService, path: string) {
  const res = await svc.adminFetch(path);
  return { res, body: await res.json() };
}

async function whole(svc: TestService): Promise<AuditRecord[]> {
  const { res, body } = await getJson(svc, "/api/audit?limit=1000");
  assertEquals(res.status, 200);
  assertEquals(res.headers.get("link"), null);
  return body;
}

/** Follows the `next` links from `path`; every page, in order. */
async function walk(svc: TestService, path: string) {
  const pages: AuditRecord[][] = [];
  const links: string[] = [];
  let next: string | undefined = path;
  while (next) {
    const { res, body } = await getJson(svc, next);
    assertEquals(res.status, 200);
    pages.push(body);
    const link = res.headers.get("link");
    next = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
    if (link) {
      assert(next, `a Link of RFC 8288's form: ${link}`);
      links.push(link);
    }
  }
  return { pages, links };
}

Deno.test("GET /api/audit answers 401 without a session and 403 for a viewer, before any parameter check", async () => {
  await using svc = await startService();
  for (const path of ["/api/audit", "/api/audit?limit=0"]) {
    const anonymous = await svc.fetch(path);
    assertEquals(anonymous.status, 401);
    assertEquals(await anonymous.json(), { error: "Unauthorised" });
  }
  const viewer = await svc.userClient("viewer");
  const forbidden = await viewer.client.get("/api/audit", {
    params: { query: { limit: 0 } },
  });
  assertEquals(forbidden, { ok: false, status: 403, error: "Forbidden" });
  let thrown: unknown;
  try {
    for await (const _ of auditPages(viewer.client)) { /* never */ }
  } catch (e) {
    thrown = e;
  }
  assert(thrown instanceof AuditPageError);
  assertEquals([thrown.status, thrown.error], [403, "Forbidden"]);
});

Deno.test("the trail is newest first, 100 by default, each record in the documented shape", async () => {
  await using svc = await startService();
  await writeRecords(svc.store, 120);
  const { res, body } = await getJson(svc, "/api/audit");
  assertEquals(res.status, 200);
  assertEquals(body.length, 100);
  assertEquals(
    body.map((r: AuditRecord) => r.id),
    Array.from({ length: 100 }, (_, i) => AT_START + 120 - i),
  );
  assertEquals(
    res.headers.get("link"),
    `</api/audit?before=${AT_START + 21}>; rel="next"`,
  );
  const oldest = (await whole(svc)).at(-1)!;
  assertEquals(oldest, {
    id: 1,
    time: oldest.time,
    action: "admin.bootstrapped",
    actor: null,
    target: { id: svc.adminAccount.id, username: ADMIN.username },
    details: { source: "environment" },
    requestId: null,
    clientAddress: null,
    via: null,
  });
  assert(
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(oldest.time),
    oldest.time,
  );
  const roleChange = body.find((r: AuditRecord) =>
    r.action === "user.role_changed"
  );
  assertEquals(Object.keys(roleChange).sort(), [
    "action",
    "actor",
    "clientAddress",
    "details",
    "id",
    "requestId",
    "target",
    "time",
    "via",
  ]);
  assertEquals(roleChange.details, { from: "viewer", to: "admin" });
  assertEquals(roleChange.via, "api");
});

Deno.test("following the next links pages through the whole trail, filters kept", async () => {
  await using svc = await seeded();
  const all = await whole(svc);
  assertEquals(all.length, TOTAL);

  const { pages, links } = await walk(svc, "/api/audit?limit=7");
  assertEquals(pages.map((p) => p.length), [7, 7, 7, 7, 7, 2]);
  assertEquals(pages.flat(), all);
  assertEquals(
    links[0],
    `</api/audit?limit=7&before=${all[6].id}>; rel="next"`,
  );

  const filtered = await walk(
    svc,
    "/api/audit?action=logout&limit=2&targetId=12",
  );
  const expected = all.filter((r) =>
    r.action === "logout" && r.target?.id === 12
  );
  assertEquals(expected.length, 3);
  assertEquals(filtered.pages.flat(), expected);
  for (const link of filtered.links) {
    assert(
      /^<\/api\/audit\?limit=2&action=logout&targetId=12&before=\d+>; rel="next"$/
        .test(link),
      link,
    );
  }
});

Deno.test("the client's auditPages follows the links to the same records", async () => {
  await using svc = await seeded();
  const all = await whole(svc);
  const pages: AuditRecord[][] = [];
  for await (const page of auditPages(svc.admin, { limit: 5 })) {
    pages.push(page);
  }
  assertEquals(pages.length, Math.ceil(TOTAL / 5));
  assertEquals(pages.flat(), all);
  const logouts: AuditRecord[] = [];
  for await (
    const page of auditPages(svc.admin, { action: "logout", limit: 1 })
  ) {
    logouts.push(...page);
  }
  assertEquals(logouts, all.filter((r) => r.action === "logout"));
});

Deno.test("each filter selects what it names: action, actorId, targetId, since, until", async () => {
  await using svc = await seeded();
  const all = await whole(svc);
  const mid = all[Math.floor(TOTAL / 2)].time;
  const cases: [string, (r: AuditRecord) => boolean][] = [
    ["action=user.role_changed", (r) => r.action === "user.role_changed"],
    ["action=admin.bootstrapped", (r) => r.action === "admin.bootstrapped"],
    ["actorId=2", (r) => r.actor?.id === 2],
    ["targetId=12", (r) => r.target?.id === 12],
    [`since=${mid}`, (r) => r.time >= mid],
    [`until=${mid}`, (r) => r.time < mid],
    [`since=${mid}&until=${mid}`, () => false],
    ["since=2000-01-01", () => true],
    ["until=2000-01-01T00:00:00%2B02:00", () => false],
    [
      "actorId=2&targetId=12&action=user.created",
      (r) =>
        r.actor?.id === 2 && r.target?.id === 12 && r.action === "user.created",
    ],
  ];
  for (const [query, keep] of cases) {
    const { res, body } = await getJson(svc, `/api/audit?limit=1000&${query}`);
    assertEquals(res.status, 200, query);
    assertEquals(body, all.filter(keep), query);
  }
  assert(all.some((r) => r.time >= mid) && all.some((r) => r.time < mid));
  // Unknown parameters are ignored.
  assertEquals(
    (await getJson(svc, "/api/audit?limit=1000&colour=red")).body,
    all,
  );
});

Deno.test("a bad value of each parameter answers 400 naming it; several name the first in order", async () => {
  await using svc = await startService();
  const bad: Record<string, string[]> = {
    limit: ["0", "1001", "abc", "1.5", "-1", "", "%205", "1e2", "5&limit=6"],
    before: ["0", "x", "-3", "1.5", "99999999999999999999"],
    action: ["nope", "USER.CREATED", ""],
    actorId: ["0", "abc", "2147483648", "1.0"],
    targetId: ["0", "-1", "2147483648"],
    since: [
      "yesterday",
      "2026-13-01T00:00:00Z",
      "2026-11-25T10:00:00",
      "1700000000",
    ],
    until: ["tomorrow", "2026-11-25T25:00:00Z", ""],
  };
  for (const [name, values] of Object.entries(bad)) {
    for (const value of values) {
      const { res, body } = await getJson(svc, `/api/audit?${name}=${value}`);
      assertEquals(
        [res.status, body],
        [400, { error: `Invalid query parameter: ${name}` }],
        `${name}=${value}`,
      );
    }
  }
  const several = await getJson(svc, "/api/audit?until=x&targetId=y&limit=0");
  assertEquals(several.body, { error: "Invalid query parameter: limit" });
  const typed = await svc.admin.get("/api/audit", {
    params: { query: { limit: 5000 } },
  });
  assertEquals(typed, {
    ok: false,
    status: 400,
    error: "Invalid query parameter: limit",
  });
});

Deno.test("since and until outside the years 0001..9999 (in UTC) answer 400 naming them, never 500", async () => {
  await using svc = await startService();
  const outside: [string, string][] = [
    ["since", "0000-01-01"],
    ["until", "0000-06-01"],
    ["since", "9999-12-31T23:59:59-23:59"],
    ["until", "9999-12-31T23:59:59.999-00:01"],
    ["since", "0001-01-01T00:00:00%2B00:01"],
  ];
  for (const [name, value] of outside) {
    const { res, body } = await getJson(svc, `/api/audit?${name}=${value}`);
    assertEquals(
      [res.status, body],
      [400, { error: `Invalid query parameter: ${name}` }],
      `${name}=${value}`,
    );
  }
  // The first and last instants of those years are times like any other.
  const edges = await getJson(
    svc,
    "/api/audit?since=0001-01-01T00:00:00Z&until=9999-12-31T23:59:59.999Z",
  );
  assertEquals(edges.res.status, 200);
  assertEquals(edges.body.length, AT_START);
  const none = await getJson(svc, "/api/audit?until=0001-01-01");
  assertEquals([none.res.status, none.body], [200, []]);
});

Deno.test("a failing database answers 500 Failed to list audit events, and the cause goes to the log", async () => {
  await using svc = await seeded();
  await svc.sql`alter table audit_events rename to audit_events_away`;
  try {
    const { res, body } = await getJson(svc, "/api/audit");
    assertEquals([res.status, body], [500, {
      error: "Failed to list audit events",
    }]);
    const logged = svc.logs.find((l) => l.msg === "request failed");
    assertEquals(logged?.answered, "Failed to list audit events");
    assert(String(JSON.stringify(logged?.cause)).includes("audit_events"));
  } finally {
    await svc.sql`alter table audit_events_away rename to audit_events`;
  }
  assertEquals((await getJson(svc, "/api/audit")).res.status, 200);
});

Deno.test("no record holds a password, a bcrypt hash or a session token", async () => {
  await using svc = await startService();
  const passwords = [ADMIN.password];
  const cookies: string[] = [];
  for (let i = 0; i < 3; i++) {
    const { account, password } = await svc.userClient(i ? "viewer" : "admin");
    passwords.push(password);
    const cookie = await loginCookie(svc, {
      username: account.username,
      password,
    });
    cookies.push(cookie);
    const reset = `a fresh passphrase ${i}`;
    passwords.push(reset);
    const patched = await svc.admin.patch("/api/users/{id}", {
      params: { path: { id: account.id } },
      body: { password: reset, role: "viewer" },
    });
    assert(patched.ok);
    const failed = await svc.fetch("/api/auth/login", {
      method: "POST",
      body: JSON.stringify({
        username: account.username,
        password: "wrong password!",
      }),
    });
    await failed.body?.cancel();
    const fresh = await loginCookie(svc, {
      username: account.username,
      password: reset,
    });
    cookies.push(fresh);
    const out = await svc.fetch("/api/auth/logout", {
      method: "POST",
      headers: { cookie: fresh },
    });
    await out.body?.cancel();
  }
  const adminCookie = await loginCookie(svc);
  cookies.push(adminCookie);
  await (await svc.fetch("/api/auth/logout", {
    method: "POST",
    headers: { cookie: adminCookie },
  })).body?.cancel();

  // Sealed or not yet (one snapshot): every record as the database holds it.
  const rows = await svc.sql<{ text: string }[]>`
    select row_to_json(a)::text as text from audit_events a
    union all select row_to_json(p)::text from audit_pending p`;
  assert(rows.length >= 5, `records: ${rows.length}`);
  const hashes =
    (await svc.sql<{ h: string }[]>`select password_hash as h from users`).map((
      r,
    ) => r.h);
  const tokens = cookies.map((c) => c.slice("sid=".length));
  const tokenHashes = await Promise.all(tokens.map(async (t) =>
    Array.from(
      new Uint8Array(
        await crypto.subtle.digest("SHA-256", new TextEncoder().encode(t)),
      ),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("")
  ));
  const api = JSON.stringify(await whole(svc));
  for (const text of [...rows.map((r) => r.text), api]) {
    assert(!/\$2[abxy]\$\d\d\$/.test(text), `a bcrypt hash in ${text}`);
    for (const secret of [...passwords, ...hashes, ...tokens, ...tokenHashes]) {
      assert(!text.includes(secret), `a secret in ${text}`);
    }
  }
});
