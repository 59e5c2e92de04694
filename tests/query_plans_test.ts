/**
 * Every filter of the users list and of the audit trail is answered from an
 * index: on tables of tens of thousands of rows (analyzed), the plan of each
 * statement the store runs for a filter reads neither users nor
 * audit_events by a sequential scan. The statements are the store's own,
 * captured as it sends them (postgres.js `debug`), with their parameters,
 * so a change of the store's SQL is planned here as it is.
 */
import postgres, { type Sql } from "postgres";
import { createStore, type Store } from "../src/db/store.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { seedAudit, seedUsers } from "./support/seed.ts";
import { migratedDatabaseUrl } from "./support/service.ts";
import { isRefusal, parseFilter } from "../src/scim/filter.ts";

const USERS = 30_000;
const AUDIT_RECORDS = 50_000;

interface Statement {
  query: string;
  parameters: unknown[];
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

interface AnalyzedNode extends PlanNode {
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: AnalyzedNode[];
}

/** The store on the test's database, and every statement it sent since `take` was last called. */
async function capturingStore() {
  const database = await migratedDatabaseUrl();
  const sent: Statement[] = [];
  const sql = postgres(database.url, {
    // The embedded database takes one connection.
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) =>
      sent.push({ query, parameters: parameters as unknown[] }),
  });
  const store = createStore(sql);
  return {
    sql,
    store,
    take: () => sent.splice(0),
    async [Symbol.asyncDispose]() {
      await store.stop();
      await sql.end();
      await database[Symbol.asyncDispose]();
    },
  };
}

/**
 * The list's version is the sum of its 64 slots: read whole by design, the
 * one relation a sequential scan is right for.
 */
const READ_WHOLE = new Set(["users_version_slots"]);

/** The relations a plan reads by a sequential scan. */
function seqScans(node: PlanNode): string[] {
  const relation = node["Relation Name"] ?? "?";
  return [
    ...(node["Node Type"] === "Seq Scan" && !READ_WHOLE.has(relation)
      ? [relation]
      : []),
    ...(node.Plans ?? []).flatMap(seqScans),
  ];
}

/**
 * `seqScans` of an analysed plan's nodes that ran: a walk of a group too
 * small to walk (src/db/user-list.ts) plans a part it never runs.
 */
function ranSeqScans(node: AnalyzedNode): string[] {
  if (node["Actual Loops"] === 0) return [];
  const relation = node["Relation Name"] ?? "?";
  return [
    ...(node["Node Type"] === "Seq Scan" && !READ_WHOLE.has(relation)
      ? [relation]
      : []),
    ...(node.Plans ?? []).flatMap(ranSeqScans),
  ];
}

/** The statements that read users or audit_events, among those sent. */
const reads = (statements: Statement[]) =>
  statements.filter((s) => /\bfrom (users|audit_events)\b/.test(s.query));

/** The statement's plan; `analyze`: as it ran, with the rows each node read. */
async function plan(
  sql: Sql,
  s: Statement,
  analyze = false,
): Promise<AnalyzedNode> {
  const [row] = await sql.unsafe(
    `explain (${analyze ? "analyze, " : ""}format json) ${s.query}`,
    s.parameters as never[],
  );
  const json = row["QUERY PLAN"];
  return (typeof json === "string" ? JSON.parse(json) : json)[0].Plan;
}

Deno.test("every filter of the users list and the audit trail is read from an index, not a sequential scan", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  // Two admins among them; audit records by the first, about users 1..USERS.
  await seedUsers(sql, USERS, { adminEvery: USERS / 2 });
  const [{ id: actorId }] = await sql<{ id: number }[]>`
    select id from users where role = 'admin' order by id limit 1`;
  await seedAudit(sql, AUDIT_RECORDS, { users: USERS, actorId });
  const [{ at, id }] = await sql<{ at: string; id: number }[]>`
    select (extract(epoch from created_at) * 1000000)::int8::text as at, id
    from users where role = 'admin' order by created_at, id limit 1`;
  const after = { at, id };
  // A few disabled: one in a thousand, a third of them with a passed end.
  await sql`
    update users set disabled_at = now(),
      disabled_until = case when id % 3000 = 0 then now() end
    where id % 1000 = 0`;
  await sql`analyze users`;
  const someone = { username: "User777", email: "USER777@example.com" };
  const [{ id: userId }] = await sql<{ id: number }[]>`
    select id from users where username = 'user777'`;

  const cases: [string, (s: Store) => Promise<unknown>][] = [
    ["role=admin", (s) => s.users.listPage({ role: "admin" }, undefined, 50)],
    [
      "role=admin, after a cursor",
      (s) => s.users.listPage({ role: "admin" }, after, 50),
    ],
    [
      "role=admin, streamed",
      (s) => Array.fromAsync(s.users.listJson({ role: "admin" })),
    ],
    [
      "username=",
      (s) => s.users.listPage({ username: someone.username }, undefined, 50),
    ],
    [
      "email=",
      (s) => s.users.listPage({ email: someone.email }, undefined, 50),
    ],
    [
      "username=, streamed",
      (s) => Array.fromAsync(s.users.listJson({ username: someone.username })),
    ],
    ["q=, selective", (s) => s.users.listPage({ q: "r7777" }, undefined, 50)],
    [
      "status=disabled",
      (s) => s.users.listPage({ status: "disabled" }, undefined, 50),
    ],
    [
      "status=disabled, streamed",
      (s) => Array.fromAsync(s.users.listJson({ status: "disabled" })),
    ],
    [
      "status=active",
      (s) => s.users.listPage({ status: "active" }, undefined, 50),
    ],
    [
      "status=active and role=admin",
      (s) => s.users.listPage({ status: "active", role: "admin" }, after, 50),
    ],
    ["status list's version", (s) => s.users.statusListVersion()],
    [
      "role=admin and q=",
      (s) => s.users.listPage({ role: "admin", q: "user" }, undefined, 50),
    ],
    [
      "audit action (none recorded)",
      (s) => s.audit.list({ limit: 51, action: "admin.recovered" }),
    ],
    [
      "audit action (one in a hundred)",
      (s) => s.audit.list({ limit: 51, action: "user.deleted" }),
    ],
    ["audit actorId", (s) => s.audit.list({ limit: 51, actorId: userId })],
    ["audit targetId", (s) => s.audit.list({ limit: 51, targetId: userId })],
    [
      "audit targetId, before a cursor",
      (s) =>
        s.audit.list({ limit: 51, targetId: userId, before: AUDIT_RECORDS }),
    ],
    [
      "audit, a reader limited to a group",
      (s) => s.audit.list({ limit: 51, reach: { groupIds: [1] } }),
    ],
    [
      "audit actorId and action",
      (s) =>
        s.audit.list({ limit: 51, actorId, action: "user.password_reset" }),
    ],
  ];

  const found: string[] = [];
  for (const [name, run] of cases) {
    db.take();
    await run(store);
    const statements = reads(db.take());
    assert(statements.length > 0, `${name}: no statement read the tables`);
    for (const s of statements) {
      const scanned = seqScans(await plan(sql, s));
      if (scanned.length) {
        found.push(`${name}: Seq Scan on ${scanned.join(", ")}\n${s.query}`);
      }
    }
  }
  assertEquals(found, []);
});

/** How many rows the plan's nodes on `relation` read, as it ran (kept and removed). */
function rowsRead(node: AnalyzedNode, relation: string): number {
  const own = node["Relation Name"] === relation
    ? ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) +
      (node["Rows Removed by Index Recheck"] ?? 0)) *
      (node["Actual Loops"] ?? 1)
    : 0;
  return own +
    (node.Plans ?? []).reduce((n, p) => n + rowsRead(p, relation), 0);
}

Deno.test("a list limited to a group's members is read from the membership, not a walk of every user", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  await seedUsers(sql, USERS);
  const [{ id: groupId }] = await sql<{ id: number }[]>`
    insert into scim_groups (connection_id, display_name)
    values (null, 'Region') returning id`;
  const [{ id: otherId }] = await sql<{ id: number }[]>`
    insert into scim_groups (connection_id, display_name)
    values (null, 'Elsewhere') returning id`;
  // 60 members, spread over the list; most users are in another group.
  await sql`
    insert into scim_members (group_id, user_id)
    select ${groupId}, id from users where id % 500 = 0`;
  await sql`
    insert into scim_members (group_id, user_id)
    select ${otherId}, id from users where id % 500 <> 0`;
  await sql`analyze users`;
  await sql`analyze scim_members`;
  const reach = { groupIds: [groupId] };
  const runs: [string, () => Promise<unknown>][] = [
    ["page", () => store.users.listPage({ reach }, undefined, 50)],
    ["streamed", () => Array.fromAsync(store.users.listJson({ reach }))],
    [
      "searched",
      () => store.users.listPage({ reach, q: "user" }, undefined, 50),
    ],
  ];
  const found: string[] = [];
  for (const [name, run] of runs) {
    db.take();
    await run();
    for (const s of reads(db.take())) {
      const p = await plan(sql, s, true);
      const scanned = seqScans(p);
      const read = rowsRead(p, "users");
      if (scanned.length || read > 1000) {
        found.push(`${name}: ${scanned} ${read} users read\n${s.query}`);
      }
    }
  }
  assertEquals(found, []);
});

/**
 * The sorts of all its rows a plan does itself (its subplans', such as a
 * user's groups, aside). An incremental sort is not one: its rows come in
 * the index's order and it reads no more of them than the page (userName's
 * index has no id, which is unique behind it).
 */
function sorts(node: PlanNode & { "Parent Relationship"?: string }): string[] {
  if (node["Parent Relationship"] === "SubPlan") return [];
  return [
    ...(node["Node Type"] === "Sort" ? [node["Node Type"]] : []),
    ...(node.Plans ?? []).flatMap(sorts),
  ];
}

Deno.test("every SCIM page by cursor is read from an index in its order, forward and back, without a sort or a sequential scan", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  await seedUsers(sql, USERS);
  await sql`update users set modified_at = now() where id % 7 = 0`;
  await sql`analyze users`;
  const found: string[] = [];
  for (
    const sort of [
      "id",
      "userName",
      "meta.created",
      "meta.lastModified",
    ] as const
  ) {
    for (const descending of [false, true]) {
      const [middle] = await store.scim.users.list(1, {
        sort,
        descending,
        offset: USERS / 2,
        limit: 1,
      });
      for (const back of [false, true]) {
        db.take();
        const rows = await store.scim.users.list(1, {
          sort,
          descending,
          limit: 101,
          from: { at: { key: middle.sortKey, id: middle.id }, back },
        });
        assertEquals(rows.length, 101);
        const [s] = reads(db.take());
        const p = await plan(sql, s);
        const bad = [...seqScans(p), ...sorts(p)];
        if (bad.length) {
          found.push(
            `${sort} ${descending ? "desc" : "asc"} ${
              back ? "back" : "on"
            }: ${bad}\n${s.query}`,
          );
        }
      }
    }
  }
  assertEquals(found, []);
});

/** The rows of users a plan read (kept or filtered out), as it ran. */
function usersRead(node: AnalyzedNode): number {
  const here = node["Relation Name"] === "users"
    ? ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) +
      (node["Rows Removed by Index Recheck"] ?? 0)) *
      (node["Actual Loops"] ?? 1)
    : 0;
  return here + (node.Plans ?? []).reduce((n, p) => n + usersRead(p), 0);
}

/** Times a user shown (its groups read) was made: the loops of the subplans. */
function subplanLoops(
  node: AnalyzedNode & { "Parent Relationship"?: string },
): number {
  const here = node["Parent Relationship"] === "SubPlan"
    ? node["Actual Loops"] ?? 0
    : 0;
  return here + (node.Plans ?? []).reduce((n, p) => n + subplanLoops(p), 0);
}

Deno.test("a SCIM lookup by userName, e-mail or externalId, and a userName prefix, read only the users they find", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  await seedUsers(sql, USERS);
  const [{ id: connectionId }] = await sql<{ id: number }[]>`
    insert into scim_connections (name, token_hash)
    values ('plans', '\\x01') returning id`;
  // A link in ten keeps e-mails of its own, as an identity provider sent them.
  await sql`
    insert into scim_user_links (connection_id, user_id, external_id, attributes)
    select ${connectionId}, id, 'ext-' || id, jsonb_build_object('emails',
      jsonb_build_array(jsonb_build_object('value', 'Work' || id || '@corp.test',
        'type', 'work')))
    from users where id % 10 = 0`;
  await sql`analyze users`;
  await sql`analyze scim_user_links`;
  const filters = [
    'userName eq "USER777"',
    'emails.value eq "USER777@EXAMPLE.COM"',
    'emails.value eq "work7770@CORP.test"',
    'emails[type eq "work" and value eq "work7770@corp.test"]',
    'externalId eq "ext-7770"',
    'userName sw "user7777"',
  ];
  const found: string[] = [];
  for (const text of filters) {
    const filter = parseFilter(text);
    if (isRefusal(filter)) throw new Error(`${text}: ${filter.detail}`);
    const where = store.scim.filter("users", filter);
    db.take();
    const rows = await store.scim.users.list(connectionId, {
      where,
      sort: "id",
      descending: false,
      limit: 100,
    });
    assert(rows.length > 0, `${text}: nobody found`);
    await store.scim.users.count(connectionId, where);
    for (const s of reads(db.take())) {
      const read = usersRead(await plan(sql, s, true));
      if (read > 100) found.push(`${text}: ${read} users read\n${s.query}`);
    }
  }
  assertEquals(found, []);
});

Deno.test("a SCIM page deep in the list makes only its own users, and from a place reads fewer than a thousand more", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  await seedUsers(sql, USERS);
  await sql`vacuum analyze users`;
  const found: string[] = [];
  for (const sort of ["id", "userName", "meta.created"] as const) {
    const q = { sort, descending: false } as const;
    db.take();
    const byOffset = await store.scim.users.list(1, {
      ...q,
      offset: USERS / 2,
      limit: 100,
    });
    for (const s of reads(db.take())) {
      const loops = subplanLoops(await plan(sql, s, true));
      if (loops > 100) found.push(`${sort} by offset: ${loops} users made`);
    }
    // The 15th place is the 15,000th user: the page at 15,001 starts after it.
    const places = await store.scim.users.places(1, { ...q, every: 1000 });
    assertEquals(places.length, Math.floor(USERS / 1000));
    db.take();
    const fromPlace = await store.scim.users.list(1, {
      ...q,
      offset: USERS / 2 - 15_000,
      limit: 100,
      from: { at: places[14], back: false },
    });
    assertEquals(fromPlace.map((r) => r.id), byOffset.map((r) => r.id));
    for (const s of reads(db.take())) {
      const read = usersRead(await plan(sql, s, true));
      if (read > 1_100) found.push(`${sort} from a place: ${read} users read`);
    }
  }
  assertEquals(found, []);
});

Deno.test("the users list in each sort reads its first page and a deep page from an index in that order, not a sort of every user", async () => {
  await using db = await capturingStore();
  const { sql, store } = db;
  await seedUsers(sql, USERS);
  const [{ id: groupId }] = await sql<{ id: number }[]>`
    insert into scim_groups (connection_id, display_name)
    values (null, 'Region') returning id`;
  await sql`
    insert into scim_members (group_id, user_id)
    select ${groupId}, id from users where id % 500 = 0`;
  // A third have signed in, at times that are not the order of their ids:
  // by last sign-in a first page is theirs, the halfway page of the rest.
  await sql`
    update users set last_login_at = now() - (id * 7919 % 10007) * interval '1 second'
    where id % 3 = 0`;
  await sql`vacuum analyze users`;
  await sql`analyze scim_members`;
  const found: string[] = [];
  for (
    const sort of [
      "createdAt",
      "-createdAt",
      "username",
      "-username",
      "lastLoginAt",
      "-lastLoginAt",
    ] as const
  ) {
    // The user halfway through the list in this order: a deep page starts there.
    const first = await store.users.listPage(
      {},
      undefined,
      USERS / 2,
      "user",
      sort,
    );
    assertEquals(first.rows.length, USERS / 2);
    const runs: [string, () => Promise<{ rows: string[] }>][] = [
      [
        "first page",
        () => store.users.listPage({}, undefined, 50, "user", sort),
      ],
      [
        "deep page",
        () => store.users.listPage({}, first.next, 50, "user", sort),
      ],
      [
        "deep page with state",
        () => store.users.listPage({}, first.next, 50, "state", sort),
      ],
      [
        "a group's members",
        () =>
          store.users.listPage(
            { reach: { groupIds: [groupId] } },
            undefined,
            50,
            "user",
            sort,
          ),
      ],
    ];
    for (const [name, run] of runs) {
      db.take();
      const page = await run();
      assert(page.rows.length > 0, `${sort} ${name}: no rows`);
      for (const s of reads(db.take())) {
        const p = await plan(sql, s, true);
        // A sort of a group's members, or of the users an older release
        // left without a username key (none here), is a sort of those few.
        const few = name === "a group's members" ||
          s.query.includes("username_fold is null");
        const bad = [
          ...ranSeqScans(p).filter((r) => r === "users"),
          ...(few ? [] : sorts(p)),
        ];
        const read = rowsRead(p, "users");
        // A page of 50, or a group's 60 members: never the 30,000.
        if (bad.length || read > 200) {
          found.push(`${sort} ${name}: ${bad} ${read} users read\n${s.query}`);
        }
      }
    }
  }
  assertEquals(found, []);
});
