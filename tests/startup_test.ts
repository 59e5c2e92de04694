import { createUserAdminClient } from "@user-admin/client";
import { ConfigError, loadConfig } from "../src/config.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { runScript, spawnService } from "./support/process.ts";
import { ON_EMBEDDED, testDatabase } from "./support/service.ts";

Deno.test("the configuration has the documented defaults", () => {
  const config = loadConfig({});
  assertEquals(
    [
      config.HOST,
      config.PORT,
      config.DATA_DIR,
      config.SESSION_TTL_SECONDS,
      config.LOGIN_MAX_FAILURES,
    ],
    ["0.0.0.0", 8000, "./data", 43200, 10],
  );
  assertEquals([
    config.LOGIN_WINDOW_SECONDS,
    config.BCRYPT_COST,
    config.DATABASE_URL,
  ], [900, 10, undefined]);
  assertEquals([
    config.COOKIE_SECURE,
    config.TRUST_PROXY,
    config.ALLOWED_ORIGINS,
  ], [false, false, []]);
});

Deno.test("a bad configuration value is refused with a message naming it", () => {
  const bad: Record<string, string>[] = [
    { PORT: "eighty" },
    { PORT: "70000" },
    { BCRYPT_COST: "9" },
    { SESSION_TTL_SECONDS: "-5" },
    { DATABASE_URL: "mysql://x/y" },
    { COOKIE_SECURE: "yes" },
    { ALLOWED_ORIGINS: "https://a.example/path" },
    { LOG_LEVEL: "loud" },
  ];
  for (const env of bad) {
    const name = Object.keys(env)[0];
    try {
      loadConfig(env);
      throw new Error(`accepted ${JSON.stringify(env)}`);
    } catch (e) {
      assert(e instanceof ConfigError, String(e));
      assertMatch(e.message, new RegExp(`^\\s+${name}: `, "m"));
    }
  }
});

Deno.test("the service exits with code 1 and says why on a bad configuration", async () => {
  const run = await runScript("main.ts", [], {
    PORT: "not-a-port",
    BCRYPT_COST: "4",
  });
  assertEquals(run.code, 1);
  assertMatch(run.stderr, /Invalid configuration/);
  assertMatch(run.stderr, /PORT/);
  assertMatch(run.stderr, /BCRYPT_COST/);
});

Deno.test("on an empty database with no ADMIN_* the service creates admin with a random password, printed once", async () => {
  await using db = await testDatabase();
  let password: string;
  {
    await using svc = await spawnService(db.env);
    const printed = /user "admin" was created with password: (\S+)/.exec(
      svc.stderr(),
    );
    assert(printed, svc.stderr());
    password = printed[1];
    assert(password.length >= 20);
    const api = createUserAdminClient({ baseUrl: svc.baseUrl });
    const login = await api.login("admin", password);
    assertEquals([login.ok, login.ok && login.data.role], [true, "admin"]);
    assertEquals(await svc.stop(), 0);
  }
  // A restart finds the user: no new password, the old one still works (data survived).
  await using again = await spawnService(db.env);
  assert(!again.stderr().includes("password"), again.stderr());
  const api = createUserAdminClient({ baseUrl: again.baseUrl });
  assertEquals((await api.login("admin", password)).status, 200);
});

Deno.test("ADMIN_USERNAME and ADMIN_PASSWORD create that admin once; an existing user is never changed", async () => {
  await using db = await testDatabase();
  const env = {
    ...db.env,
    ADMIN_USERNAME: "root",
    ADMIN_PASSWORD: "first-password",
    ADMIN_EMAIL: "root@corp.example",
  };
  {
    await using svc = await spawnService(env);
    const api = createUserAdminClient({ baseUrl: svc.baseUrl });
    const login = await api.login("root", "first-password");
    assert(login.ok);
    assertEquals([login.data.role, login.data.email, login.data.name], [
      "admin",
      "root@corp.example",
      "Administrator",
    ]);
    // Demote root: a later start must not undo it.
    await api.PATCH("/api/users/{id}", {
      params: { path: { id: login.data.id } },
      body: { role: "viewer" },
    });
    const list = await api.GET("/api/users");
    assertEquals(list.response.status, 403);
  }
  await using svc = await spawnService({
    ...env,
    ADMIN_PASSWORD: "second-password",
  });
  const api = createUserAdminClient({ baseUrl: svc.baseUrl });
  assertEquals((await api.login("root", "second-password")).status, 401);
  const login = await api.login("root", "first-password");
  assert(login.ok);
  assertEquals(login.data.role, "viewer");
});

Deno.test("create-admin recovers access: it creates an admin, or resets a user to admin and ends their sessions", async () => {
  await using db = await testDatabase();
  const env = {
    ...db.env,
    ADMIN_USERNAME: "root",
    ADMIN_PASSWORD: "root-password",
  };
  let viewerId: number;
  let carolCookie: string;
  {
    await using svc = await spawnService(env);
    const api = createUserAdminClient({ baseUrl: svc.baseUrl });
    await api.login("root", "root-password");
    const created = await api.POST("/api/users", {
      body: {
        username: "Carol",
        name: "Carol",
        email: "carol@x.io",
        password: "carol-password",
        role: "viewer",
      },
    });
    viewerId = created.data!.id;
    const carolLogin = await fetch(`${svc.baseUrl}/api/auth/login`, {
      method: "POST",
      body: JSON.stringify({ username: "carol", password: "carol-password" }),
    });
    await carolLogin.body?.cancel();
    carolCookie = carolLogin.headers.get("set-cookie")!.split(";")[0];
    // The embedded database has one owner: the service stops before the task runs.
  }
  const created = await runScript("src/cli/create-admin.ts", [
    "--username",
    "rescue",
    "--password",
    "rescue-password",
  ], env);
  assertEquals(created.code, 0, created.stderr);
  assertMatch(created.stdout, /Created admin "rescue"/);
  const reset = await runScript("src/cli/create-admin.ts", [
    "--username",
    "carol",
  ], env);
  assertEquals(reset.code, 0, reset.stderr);
  const generated = /Password: (\S+)/.exec(reset.stdout)?.[1];
  assert(generated, reset.stdout);
  const refused = await runScript("src/cli/create-admin.ts", [
    "--username",
    "x",
    "--password",
    "short",
  ], env);
  assertEquals(refused.code, 1);
  assertMatch(refused.stderr, /Password must be at least 8 characters/);

  await using svc = await spawnService(env);
  const rescue = createUserAdminClient({ baseUrl: svc.baseUrl });
  assertEquals((await rescue.login("rescue", "rescue-password")).status, 200);
  const carol = createUserAdminClient({ baseUrl: svc.baseUrl });
  const login = await carol.login("Carol", generated);
  assert(login.ok);
  assertEquals([login.data.id, login.data.role], [viewerId, "admin"]);
  assertEquals((await carol.login("Carol", "carol-password")).status, 401);
  const old = await fetch(`${svc.baseUrl}/api/auth/me`, {
    headers: { cookie: carolCookie },
  });
  assertEquals(old.status, 401, "the session from before the reset has ended");
  await old.body?.cancel();
});

Deno.test({
  name: "the embedded database keeps its data in DATA_DIR across restarts",
  ignore: !ON_EMBEDDED,
  async fn() {
    await using db = await testDatabase();
    const env = {
      ...db.env,
      ADMIN_USERNAME: "root",
      ADMIN_PASSWORD: "root-password",
    };
    {
      await using svc = await spawnService(env);
      const api = createUserAdminClient({ baseUrl: svc.baseUrl });
      await api.login("root", "root-password");
      await api.POST("/api/users", {
        body: {
          username: "kept",
          name: "Kept",
          email: "kept@x.io",
          password: "kept-password",
          role: "viewer",
        },
      });
      assertEquals(await svc.stop("SIGINT"), 0);
    }
    await using svc = await spawnService(env);
    const api = createUserAdminClient({ baseUrl: svc.baseUrl });
    await api.login("root", "root-password");
    const list = await api.GET("/api/users");
    assertEquals(list.data!.map((u) => u.username), ["root", "kept"]);
  },
});

Deno.test({
  name:
    "a second process cannot open the embedded database while the service holds it",
  ignore: !ON_EMBEDDED,
  async fn() {
    await using db = await testDatabase();
    await using _svc = await spawnService(db.env);
    const run = await runScript("src/cli/create-admin.ts", [
      "--username",
      "x",
      "--password",
      "password-x",
    ], db.env);
    assertEquals(run.code, 1);
    assertMatch(run.stderr, /in use by another process/);
  },
});
