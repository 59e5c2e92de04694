import { createUserAdminClient } from "@user-admin/client";
import type { Sql } from "postgres";
import { ConfigError, loadConfig } from "../src/config.ts";
import { connect } from "../src/db/database.ts";
import { startEmbeddedPostgres } from "../src/db/embedded.ts";
import { loadMigrations, migrate } from "../src/db/migrate.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { embeddedOnly, postgresOnly } from "./support/conditions.ts";
import { freePort, runScript, spawnService } from "./support/process.ts";
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

Deno.test("on an empty database with no ADMIN_* the service creates admin with a random password, printed once and last", async () => {
  await using db = await testDatabase();
  let password: string;
  {
    // HOST 127.0.0.1 (spawnService's), no PUBLIC_URL: the block names
    // http://localhost, where a browser allows passkeys, and the console.
    await using svc = await spawnService(db.env);
    const block = await firstAdminBlock(svc);
    password = block.password;
    assert(password.length >= 20);
    const printed = `http://localhost:${new URL(svc.baseUrl).port}`;
    // Set apart from what came before, the console's URL and /docs beside it.
    assertMatch(block.text, /\n\n={40,}\n/);
    assert(block.text.includes(`Sign in at ${printed}/admin`), block.text);
    assert(block.text.includes(`${printed}/docs`), block.text);
    const api = createUserAdminClient({ baseUrl: svc.baseUrl });
    const login = await api.login("admin", password);
    assertEquals([login.ok, login.ok && login.data.role], [true, "admin"]);
    // PUBLIC_URL is that address: the relying party of passkeys and the
    // issuer an authenticator app shows.
    const options = await api.post("/api/auth/mfa/passkeys/options");
    assertEquals(
      options.ok && (options.data.rp as { id: string }).id,
      "localhost",
    );
    const totp = await api.post("/api/auth/mfa/totp");
    assertEquals(
      totp.ok && new URL(totp.data.otpauthUrl).searchParams.get("issuer"),
      `User admin (${new URL(printed).host})`,
    );
    assertEquals(await svc.stop(), 0);
  }
  // A restart finds the user: no new password, the old one still works (data survived).
  await using again = await spawnService(db.env);
  assert(!again.stderr().includes("password"), again.stderr());
  const api = createUserAdminClient({ baseUrl: again.baseUrl });
  assertEquals((await api.login("admin", password)).status, 200);
});

/**
 * The first-admin block on stderr: waits for it (stderr is read apart from
 * the HTTP answer), and checks that nothing follows it.
 */
async function firstAdminBlock(svc: { stderr(): string }) {
  for (
    let i = 0;
    i < 100 && !/password: \S+[^]*={40,}\n/.test(svc.stderr());
    i++
  ) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const text = svc.stderr();
  const printed = /\n {4}username: admin\n {4}password: (\S+)\n/.exec(text);
  assert(printed, text);
  assertMatch(text, /={40,}\n+$/, "the block is the last thing on stderr");
  return { password: printed[1], text };
}

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
    LOG_LEVEL: "info",
  });
  // Ignored, and said so, with the way to a new password.
  const said = svc.lines.find((l) => l.username === "root");
  assertEquals(
    said?.msg,
    "ADMIN_PASSWORD ignored: user ADMIN_USERNAME exists, and the environment never changes an existing user; to set a new password run `deno task create-admin --username NAME` (on the embedded database, with the service stopped)",
  );
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
  ...embeddedOnly(
    "the embedded database keeps its data in DATA_DIR across restarts",
  ),
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
  ...embeddedOnly(
    "a second process cannot open the embedded database while the service holds it",
  ),
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

/**
 * main.ts run to its end (killed after a minute, so a hang fails instead
 * of stalling the suite): its exit code and what it printed on stderr,
 * without the package downloads of a cold cache.
 */
async function runMain(env: Record<string, string>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("../", import.meta.url),
    // Only the database given here: never the suite's DATABASE_URL itself.
    env: {
      HOST: "127.0.0.1",
      PORT: String(freePort()),
      NO_COLOR: "1",
      DATABASE_URL: "",
      ADMIN_USERNAME: "",
      ADMIN_PASSWORD: "",
      ...env,
    },
    stdin: "null",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const stderr = new TextDecoder().decode(out.stderr).split("\n")
    .filter((line) => !line.startsWith("Download ")).join("\n");
  return {
    code: out.code,
    stderr,
    stdout: new TextDecoder().decode(out.stdout),
  };
}

/** One line naming `variable`, saying what to do, and no stack trace. */
function assertPlainFailure(
  run: { code: number; stderr: string },
  variable: string,
  says: RegExp,
) {
  assertEquals(run.code, 1, run.stderr);
  const lines = run.stderr.trim().split("\n");
  assertEquals(lines.length, 1, run.stderr);
  assertMatch(lines[0], new RegExp(`^${variable}\\b`));
  assertMatch(lines[0], says);
  assertMatch(lines[0], /(: |\. )(start|create|set|stop|correct|rename)/i);
  assert(!/\bat .*:\d+:\d+/.test(run.stderr), run.stderr);
}

Deno.test("DATABASE_URL on a closed port: one line naming it, exit 1", async () => {
  const run = await runMain({
    DATABASE_URL: `postgres://postgres@127.0.0.1:${freePort()}/test`,
  });
  assertPlainFailure(run, "DATABASE_URL", /connection refused/);
});

Deno.test({
  ...postgresOnly(
    "DATABASE_URL naming a database that does not exist: one line naming it, exit 1",
  ),
  async fn() {
    const url = new URL(Deno.env.get("DATABASE_URL")!);
    url.pathname = "/ua_missing_database";
    const run = await runMain({ DATABASE_URL: url.href });
    assertPlainFailure(
      run,
      "DATABASE_URL",
      /database "ua_missing_database" does not exist/,
    );
  },
});

Deno.test("DATA_DIR that cannot be a directory: one line naming it, exit 1, the file untouched", async () => {
  const file = await Deno.makeTempFile({ prefix: "user-admin-not-a-dir-" });
  try {
    await Deno.writeTextFile(file, "keep me");
    for (const dataDir of [file, `${file}/data`]) {
      const run = await runMain({ DATA_DIR: dataDir });
      assertPlainFailure(run, "DATA_DIR", /not a directory|cannot use/);
    }
    assertEquals(await Deno.readTextFile(file), "keep me");
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("a port in use: one line naming PORT, exit 1, and nothing written (no admin created, no password printed)", async () => {
  await using db = await testDatabase();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const run = await runMain({ ...db.env, PORT: String(taken.addr.port) });
    assertPlainFailure(run, "PORT", /already in use/);
    assert(!run.stderr.includes("password"), run.stderr);
  } finally {
    taken.close();
  }
  // The database is as it was: the next start still finds no user.
  await using svc = await spawnService(db.env);
  await firstAdminBlock(svc);
});

Deno.test("METRICS_PORT in use: one line naming it, exit 1", async () => {
  await using db = await testDatabase();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const run = await runMain({
      ...db.env,
      METRICS_PORT: String(taken.addr.port),
    });
    assertPlainFailure(run, "METRICS_PORT", /already in use/);
    assert(!run.stderr.includes("password"), run.stderr);
  } finally {
    taken.close();
  }
});

Deno.test("users that collide under the canonical key stop the migration: one line naming the ids, exit 1", async () => {
  // A database at migration 001 holding two usernames that lower() keeps
  // apart and NFKC does not (the "fi" ligature).
  await using db = await testDatabase();
  let env = db.env;
  let cleanup = async () => {};
  if (ON_EMBEDDED) {
    const dir = await Deno.makeTempDir({ prefix: "user-admin-conflict-" });
    env = { DATA_DIR: dir };
    cleanup = () => Deno.remove(dir, { recursive: true });
    const embedded = await startEmbeddedPostgres(dir);
    const sql = connect(embedded.url, { max: 1, prepare: true });
    await atMigration1WithCollision(sql);
    await sql.end();
    await embedded.close();
  } else {
    const sql = connect(db.env.DATABASE_URL, { max: 1, prepare: true });
    await atMigration1WithCollision(sql);
    await sql.end();
  }
  try {
    const run = await runMain(env);
    assertPlainFailure(
      run,
      ON_EMBEDDED ? "DATA_DIR" : "DATABASE_URL",
      /collide under the canonical username\/email key: username of ids \d+, \d+/,
    );
  } finally {
    await cleanup();
  }
});

async function atMigration1WithCollision(sql: Sql) {
  const first = (await loadMigrations()).filter((m) => m.version === 1);
  await migrate(sql, first);
  await sql`
    insert into users (username, name, email, role, password_hash)
    values (${"\u{FB01}le"}, 'A', 'a@example.com', 'viewer', 'x'),
           ('file', 'B', 'b@example.com', 'viewer', 'x')`;
}
