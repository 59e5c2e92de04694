/**
 * The case-folded and look-alike keys of usernames and e-mails (migration
 * 011): existing rows keyed by the migration, a collision among them
 * stopping the start with the ids, and rows an older release inserts
 * during a rolling upgrade (without the new keys) served as they are and
 * keyed by housekeeping, a collision among them logged.
 */
import type { Sql } from "postgres";
import { loadConfig, StartupError } from "../src/config.ts";
import { loadMigrations, migrate } from "../src/db/migrate.ts";
import { startHousekeeping } from "../src/housekeeping.ts";
import { createLogger } from "../src/log.ts";
import { startService as startReal } from "../src/server.ts";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { onDatabase, startService, testDatabase } from "./support/service.ts";

/** The database as it was before migration 011 (which only added these columns and their indexes). */
async function before011(sql: Sql) {
  await sql`alter table users drop column username_fold,
    drop column email_fold, drop column username_skeleton,
    drop column email_skeleton`;
  await sql`delete from schema_migrations where version = 11`;
}

/** A users row as a release without the new keys writes it: its lower-case keys only. */
async function insertOld(
  sql: Sql,
  username: string,
  email: string,
  passwordHash = "x",
): Promise<number> {
  const [{ id }] = await sql<{ id: number }[]>`
    insert into users (username, username_key, name, name_key, email,
      email_key, role, password_hash)
    values (${username}, ${username.normalize("NFKC").toLowerCase()},
      'Older', 'older', ${email}, ${email.normalize("NFKC").toLowerCase()},
      'viewer', ${passwordHash})
    returning id`;
  return id;
}

const CYRILLIC_SCOPE = "\u0455\u0441\u043e\u0440\u0435"; // ѕсоре

Deno.test("migration 011 keys existing rows: case-folded and look-alike keys, unique, beside the lower-case ones", async () => {
  await using db = await testDatabase("migrated");
  await onDatabase(db.env, async (sql) => {
    await before011(sql);
    const strasse = await insertOld(
      sql,
      "Stra\u00dfe",
      "Stra\u00dfe@example.com",
    );
    const cyrillic = await insertOld(sql, CYRILLIC_SCOPE, "c@example.com");
    const sigma = await insertOld(
      sql,
      "\u03a3\u039f\u03a6\u039f\u03a3",
      "s@example.com",
    );
    const applied = await migrate(sql, await loadMigrations());
    assertEquals(applied, ["011_identity_keys.ts"]);
    const rows = await sql<Record<string, string | number>[]>`
      select id, username_key, username_fold, email_fold, username_skeleton
      from users order by id`;
    assertEquals([...rows], [
      {
        id: strasse,
        username_key: "stra\u00dfe",
        username_fold: "strasse",
        email_fold: "strasse@example.com",
        username_skeleton: "strasse",
      },
      {
        id: cyrillic,
        username_key: CYRILLIC_SCOPE,
        username_fold: CYRILLIC_SCOPE,
        email_fold: "c@example.com",
        username_skeleton: "scope",
      },
      {
        id: sigma,
        // lower() ends the word with a final sigma; folding does not.
        username_key: "\u03c3\u03bf\u03c6\u03bf\u03c2",
        username_fold: "\u03c3\u03bf\u03c6\u03bf\u03c3",
        email_fold: "s@example.com",
        username_skeleton: rows[2].username_skeleton,
      },
    ]);
    const indexes = await sql<{ indexname: string }[]>`
      select indexname from pg_indexes
      where tablename = 'users' and indexdef like 'CREATE UNIQUE INDEX%'
      order by indexname`;
    assertEquals(indexes.map((i) => i.indexname), [
      "users_email_fold",
      "users_email_key",
      "users_email_skeleton",
      "users_pkey",
      "users_username_fold",
      "users_username_key",
      "users_username_skeleton",
    ]);
  });
});

Deno.test("existing users that look alike stop the start, naming their ids, and nothing is migrated", async () => {
  await using db = await testDatabase("migrated");
  const ids = await onDatabase(db.env, async (sql) => {
    await before011(sql);
    return {
      scope: await insertOld(sql, "scope", "scope@example.com"),
      cyrillic: await insertOld(sql, CYRILLIC_SCOPE, "other@example.com"),
      alice: await insertOld(sql, "alice", "alice@corp.example"),
      dotless: await insertOld(sql, "alice2", "al\u0131ce@corp.example"),
      strasse: await insertOld(sql, "stra\u00dfe", "x1@example.com"),
      upper: await insertOld(sql, "STRASSE", "x2@example.com"),
    };
  });
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", ...db.env });
  const refused = await startReal(config, { log: createLogger("silent") })
    .then(async (started) => {
      await started.close();
      return undefined;
    }, (e: unknown) => e);
  assert(refused instanceof StartupError, `started, or ${refused}`);
  const said = refused.message;
  for (
    const group of [
      `username of ids ${ids.scope}, ${ids.cyrillic}`,
      `username of ids ${ids.strasse}, ${ids.upper}`,
      `email of ids ${ids.alice}, ${ids.dotless}`,
    ]
  ) {
    assert(said.includes(group), `${group} not in: ${said}`);
  }
  assert(!said.includes(`\n`), said);
  await onDatabase(db.env, async (sql) => {
    const [row] = await sql`select 1 from schema_migrations where version = 11`;
    assertEquals(row, undefined);
    const [column] = await sql`
      select 1 from information_schema.columns
      where table_name = 'users' and column_name = 'username_fold'`;
    assertEquals(column, undefined);
  });
});

Deno.test("rows an older release inserts serve without the new keys, and housekeeping keys them; one that looks like another user is logged with both ids", async () => {
  await using svc = await startService();
  const hash = await createPasswordHasher(10).hash("older-password");
  const scope = await svc.admin.POST("/api/users", {
    body: {
      username: "scope",
      name: "Scope",
      email: "scope@example.com",
      password: "scope-password",
      role: "viewer",
    },
  });
  assertEquals(scope.response.status, 201);
  const older = await insertOld(svc.sql, "Olduser", "old@example.com", hash);
  // Allowed by the lower-case key alone, as an older release allows it.
  const twin = await insertOld(
    svc.sql,
    CYRILLIC_SCOPE,
    "twin@example.com",
    hash,
  );

  // Unkeyed rows work: login under another case, the list, exact lookups.
  for (const name of ["OLDUSER", CYRILLIC_SCOPE]) {
    const login = await svc.client().login(name, "older-password");
    assert(login.ok, `${name}: ${login.ok ? "" : login.error}`);
  }
  const found = await svc.admin.GET("/api/users", {
    params: { query: { username: "olduser", email: "OLD@example.com" } },
  });
  assertEquals(found.data?.map((u) => u.id), [older]);
  const list = await svc.admin.GET("/api/users");
  assertEquals(list.response.status, 200);
  assertEquals(list.data!.length, 4);

  const logs: Record<string, unknown>[] = [];
  const log = createLogger("info", (line) => logs.push(JSON.parse(line)));
  const housekeeping = startHousekeeping(
    svc.store,
    { ...svc.config, HOUSEKEEPING_INTERVAL_MS: 20 },
    log,
  );
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [row] = await svc.sql<{ username_fold: string | null }[]>`
        select username_fold from users where id = ${older}`;
      const warned = logs.some((l) => l.msg?.toString().includes("looks like"));
      if (row.username_fold !== null && warned) break;
      assert(Date.now() < deadline, `not keyed: ${JSON.stringify(logs)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await housekeeping.stop();
  }
  const keys = await svc.sql<Record<string, string | number | null>[]>`
    select id, username_fold, email_fold, username_skeleton, email_skeleton
    from users where id in (${older}, ${twin}) order by id`;
  assertEquals([...keys], [
    {
      id: older,
      username_fold: "olduser",
      email_fold: "old@example.com",
      username_skeleton: "olduser",
      // confusables.txt: m looks like rn.
      email_skeleton: "old@exarnple.corn",
    },
    {
      id: twin,
      username_fold: null,
      email_fold: null,
      username_skeleton: null,
      email_skeleton: null,
    },
  ]);
  const warning = logs.find((l) => l.msg?.toString().includes("looks like"));
  assertEquals(warning?.level, "warn");
  assertEquals([warning?.id, warning?.lookAlikeOf], [twin, [
    scope.data!.id,
  ]]);
  // The look-alike keeps working by its own name until an operator acts.
  const login = await svc.client().login(CYRILLIC_SCOPE, "older-password");
  assert(login.ok);
});

Deno.test("a start keys the rows an older release inserted meanwhile", async () => {
  await using db = await testDatabase("first-admin");
  const older = await onDatabase(
    db.env,
    (sql) => insertOld(sql, "Stra\u00dfe", "Older@example.com"),
  );
  await using svc = await startService(db.env);
  const [row] = await svc.sql<Record<string, string>[]>`
    select username_fold, email_fold, username_skeleton, email_skeleton
    from users where id = ${older}`;
  assertEquals({ ...row }, {
    username_fold: "strasse",
    email_fold: "older@example.com",
    username_skeleton: "strasse",
    // confusables.txt: m looks like rn.
    email_skeleton: "older@exarnple.corn",
  });
  const keyed = svc.logs.find((l) =>
    l.msg === "keyed users an older release wrote"
  );
  assertEquals(keyed?.users, 1);
});
