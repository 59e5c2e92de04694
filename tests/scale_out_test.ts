/**
 * Several instances of the service, each a real `deno run main.ts` process,
 * on one PostgreSQL database. Only on a PostgreSQL server (DATABASE_URL):
 * the embedded PGlite belongs to one process by design.
 */
import { createUserAdminClient } from "@user-admin/client";
import { loadConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/database.ts";
import { loadMigrations } from "../src/db/migrate.ts";
import { createStore } from "../src/db/store.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { startCluster } from "./support/cluster.ts";
import { postgresOnly } from "./support/conditions.ts";
import {
  ADMIN,
  type Contents,
  loginCookie as loginOver,
  testDatabase,
} from "./support/service.ts";
/**
 * Three instances at once on one database of their own: by default one a
 * first start with ADMIN has made (migrated, the admin there), or `empty`.
 */
async function cluster(
  env: Record<string, string> = {},
  contents: Contents = "first-admin",
) {
  const c = await startCluster(3, { env, contents });
  return Object.assign(c, {
    client: (i: number, cookie?: string) =>
      createUserAdminClient({
        baseUrl: c.urls[i],
        headers: cookie ? { cookie } : undefined,
      }),
  });
}

/** Logs in on one instance and returns the session cookie as a header value. */
const loginCookie = (baseUrl: string, username: string, password: string) =>
  loginOver({ fetch: (path, init) => fetch(baseUrl + path, init) }, {
    username,
    password,
  });

Deno.test({
  ...postgresOnly(
    "three instances started at once on an empty database apply each migration once and all become healthy",
  ),
  async fn() {
    await using c = await cluster({}, "empty");
    for (const instance of c.instances) {
      const res = await fetch(`${instance.baseUrl}/health`);
      assertEquals(res.status, 200);
      assertEquals(await res.json(), { status: "ok" });
    }
    const applied = await c.sql<{ version: number; name: string }[]>`
      select version, name from schema_migrations order by version`;
    const expected = (await loadMigrations()).map((m) => ({
      version: m.version,
      name: m.name,
    }));
    assertEquals([...applied], expected);
    const admins = await c
      .sql`select 1 from users where username = ${ADMIN.username}`;
    assertEquals(admins.length, 1, "the first admin is created once");
  },
});

Deno.test({
  ...postgresOnly(
    "a session made on one instance works on the others, and a role change on one applies on the next request to any other",
  ),
  async fn() {
    await using c = await cluster();
    const [a, b] = c.instances;
    const admin = c.client(
      0,
      await loginCookie(a.baseUrl, ADMIN.username, ADMIN.password),
    );
    const created = await admin.POST("/api/users", {
      body: {
        username: "carol",
        name: "Carol",
        email: "carol@example.com",
        password: "carol-password",
        role: "viewer",
      },
    });
    assertEquals(created.response.status, 201);
    const id = created.data!.id;

    const carolCookie = await loginCookie(b.baseUrl, "carol", "carol-password");
    const carolOn = (i: number) => c.client(i, carolCookie);
    for (let i = 0; i < 3; i++) {
      assertEquals(
        (await carolOn(i).me()).ok,
        true,
        `session on instance ${i}`,
      );
      assertEquals((await carolOn(i).GET("/api/users")).response.status, 403);
    }

    const promote = await admin.PATCH("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "admin" },
    });
    assertEquals(promote.data?.role, "admin");
    assertEquals((await carolOn(2).GET("/api/users")).response.status, 200);
    assertEquals((await carolOn(1).GET("/api/users")).response.status, 200);

    const adminOnB = c.client(
      1,
      await loginCookie(b.baseUrl, ADMIN.username, ADMIN.password),
    );
    await adminOnB.PATCH("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "viewer" },
    });
    assertEquals((await carolOn(0).GET("/api/users")).response.status, 403);

    await carolOn(2).logout();
    assertEquals((await carolOn(0).me()).status, 401, "logged out everywhere");
  },
});

Deno.test({
  ...postgresOnly(
    "login throttling counts failed attempts across instances",
  ),
  async fn() {
    await using c = await cluster({ LOGIN_MAX_FAILURES: "3" });
    for (let i = 0; i < 3; i++) {
      const wrong = await c.client(i).login(ADMIN.username, "wrong-password");
      assertEquals(wrong.status, 401, `failure ${i + 1} on instance ${i}`);
    }
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${c.instances[i].baseUrl}/api/auth/login`, {
        method: "POST",
        body: JSON.stringify(ADMIN),
      });
      assertEquals(res.status, 429, `right password on instance ${i}`);
      assertEquals(await res.json(), { error: "Too many login attempts" });
      assert(Number(res.headers.get("retry-after")) > 0);
    }
  },
});

Deno.test({
  ...postgresOnly(
    "instances with DATABASE_PREPARE=false and DATABASE_POOL_MAX=2 serve every operation within two connections each, beside the one that listens for seals",
  ),
  async fn() {
    await using c = await cluster({
      DATABASE_PREPARE: "false",
      DATABASE_POOL_MAX: "2",
    });
    const admin = c.client(
      0,
      await loginCookie(c.instances[0].baseUrl, ADMIN.username, ADMIN.password),
    );
    const created = await admin.POST("/api/users", {
      body: {
        username: "dave",
        name: "Dave",
        email: "dave@example.com",
        password: "dave-password",
        role: "viewer",
      },
    });
    assertEquals(created.response.status, 201);
    const id = created.data!.id;
    const path = { params: { path: { id } } };
    assertEquals(
      (await admin.GET("/api/users/{id}", path)).data?.username,
      "dave",
    );
    assertEquals(
      (await admin.PATCH("/api/users/{id}", {
        ...path,
        body: { role: "admin", password: "new-password" },
      })).data?.role,
      "admin",
    );
    assertEquals((await c.client(1).login("dave", "new-password")).ok, true);
    assertEquals((await admin.DELETE("/api/users/{id}", path)).data, {
      ok: true,
    });

    // Enough requests at once on every instance to open every connection it may.
    const cookie = await loginCookie(
      c.instances[2].baseUrl,
      ADMIN.username,
      ADMIN.password,
    );
    await Promise.all(
      c.instances.flatMap((instance) =>
        Array.from({ length: 30 }, async () => {
          const res = await fetch(`${instance.baseUrl}/api/users`, {
            headers: { cookie },
          });
          assertEquals(res.status, 200);
          assertEquals((await res.json()).length, 1);
        })
      ),
    );
    const [{ n }] = await c.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = 'user-admin'`;
    // Each instance's pool, and its one LISTEN connection (audit_sealed).
    assertEquals(n, 3 * (2 + 1));
  },
});

Deno.test({
  ...postgresOnly(
    "DATABASE_PREPARE=false leaves no prepared statement on the connection, where the default prepares each query",
  ),
  async fn() {
    await using db = await testDatabase();
    const preparedAfterWork = async (prepare: string) => {
      const config = loadConfig({
        ...db.env,
        DATABASE_POOL_MAX: "1",
        DATABASE_PREPARE: prepare,
      });
      const opened = await openDatabase(config);
      try {
        const store = createStore(opened.sql);
        await store.users.count();
        await store.users.findForLogin("nobody");
        for await (const _ of store.users.listJson()) { /* read it all */ }
        // One connection: this runs on the same session as the work above.
        const [{ n }] = await opened.sql<{ n: number }[]>`
          select count(*)::int as n from pg_prepared_statements`;
        return n;
      } finally {
        await opened.close();
      }
    };
    assertEquals(await preparedAfterWork("false"), 0);
    assert(await preparedAfterWork("true") > 0, "the default does prepare");
  },
});

Deno.test({
  ...postgresOnly(
    "the list's ETag is the same on every instance and changes when any instance writes a user",
  ),
  async fn() {
    await using c = await cluster();
    const cookie = await loginCookie(
      c.instances[0].baseUrl,
      ADMIN.username,
      ADMIN.password,
    );
    const list = async (i: number, ifNoneMatch?: string | null) => {
      const res = await fetch(`${c.instances[i].baseUrl}/api/users`, {
        headers: {
          cookie,
          ...(ifNoneMatch ? { "if-none-match": ifNoneMatch } : {}),
        },
      });
      await res.body?.cancel();
      return { status: res.status, etag: res.headers.get("etag") };
    };
    const first = await list(0);
    assertEquals(first.status, 200);
    assert(first.etag);
    for (const i of [1, 2]) {
      assertEquals(await list(i, first.etag), {
        status: 304,
        etag: first.etag,
      });
    }

    // A write through instance 1 shows on instances 0 and 2.
    const created = await c.client(1, cookie).POST("/api/users", {
      body: {
        username: "erin",
        name: "Erin",
        email: "erin@example.com",
        password: "erin-password",
        role: "viewer",
      },
    });
    assertEquals(created.response.status, 201);
    const afterCreate = await list(0, first.etag);
    assertEquals(afterCreate.status, 200);
    assert(afterCreate.etag !== first.etag);
    assertEquals(await list(2, afterCreate.etag), {
      status: 304,
      etag: afterCreate.etag,
    });

    // So does a change on instance 2, and a deletion on instance 0.
    await c.client(2, cookie).PATCH("/api/users/{id}", {
      params: { path: { id: created.data!.id } },
      body: { role: "admin" },
    });
    const afterUpdate = await list(1, afterCreate.etag);
    assertEquals(afterUpdate.status, 200);
    await c.client(0, cookie).DELETE("/api/users/{id}", {
      params: { path: { id: created.data!.id } },
    });
    const afterDelete = await list(1, afterUpdate.etag);
    assertEquals(afterDelete.status, 200);
    assert(afterDelete.etag !== afterUpdate.etag);
  },
});
