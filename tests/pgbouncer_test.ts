/**
 * Three instances through a real PgBouncer in transaction pooling mode
 * (DATABASE_PREPARE=false), as docs/operations.md's "Behind PgBouncer" sets it up: a
 * private pgbouncer process with its own config and port in a temp
 * directory, in front of a fresh database on the local PostgreSQL server.
 * Needs Debian's `pgbouncer` (.ci/install-extras installs it); in CI a
 * missing pgbouncer fails the test instead of skipping it.
 */
import { seedUsers } from "./support/users.ts";
import postgres from "postgres";
import {
  type Account,
  createUserAdminClient,
  type UserAdminClient,
} from "@user-admin/client";
import { assert, assertEquals } from "./support/assert.ts";
import { freePort, startInstances } from "./support/process.ts";
import { withTool } from "./support/conditions.ts";
import { testDatabase } from "./support/service.ts";

const PGBOUNCER = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((p) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
});
const PGBOUNCER_TOOL = {
  what: "pgbouncer in /usr/sbin or /usr/bin",
  present: PGBOUNCER !== undefined,
  install: ".ci/install-extras installs it (apt-get install pgbouncer)",
};

/** Rows per streamed batch today is 2,000: this many makes more than two. */
const BULK_USERS = 4_500;

/**
 * A pgbouncer of our own in front of `database` on the server of
 * `serverUrl`; killed on dispose. It refuses to run as root, so then it
 * drops to the `postgres` user (-u), which must read its directory.
 */
async function startPgBouncer(serverUrl: URL, database: string) {
  assert(PGBOUNCER, "pgbouncer is not installed (apt-get install pgbouncer)");
  const dir = await Deno.makeTempDir({ prefix: "user-admin-pgbouncer-" });
  await Deno.chmod(dir, 0o755);
  const port = freePort();
  const user = decodeURIComponent(serverUrl.username) || "postgres";
  const ini = `[databases]
${database} = host=${serverUrl.hostname} port=${
    serverUrl.port || 5432
  } dbname=${database}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/userlist.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
; postgres.js sends this startup parameter (REQUEST_TIMEOUT_MS / 3); PgBouncer
; would refuse the connection for it, so the timeout is set per database below.
ignore_startup_parameters = statement_timeout
`;
  await Deno.writeTextFile(`${dir}/pgbouncer.ini`, ini, { mode: 0o644 });
  await Deno.writeTextFile(`${dir}/userlist.txt`, `"${user}" ""\n`, {
    mode: 0o644,
  });
  const asRoot = Deno.uid() === 0;
  const child = new Deno.Command(PGBOUNCER, {
    args: [...(asRoot ? ["-u", "postgres"] : []), `${dir}/pgbouncer.ini`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let log = "";
  const decoder = new TextDecoder();
  const collect = (stream: ReadableStream<Uint8Array>) =>
    stream.pipeTo(
      new WritableStream({ write: (c) => void (log += decoder.decode(c)) }),
    );
  const reading = Promise.all([collect(child.stdout), collect(child.stderr)]);
  const url = `postgres://${
    encodeURIComponent(user)
  }@127.0.0.1:${port}/${database}`;
  // Ready once it accepts a connection and runs a query.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const probe = postgres(url, {
      max: 1,
      prepare: false,
      connect_timeout: 2,
      onnotice: () => {},
    });
    try {
      await probe`select 1`;
      break;
    } catch (e) {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`pgbouncer did not start: ${e}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await probe.end({ timeout: 1 });
    }
  }
  return {
    url,
    log: () => log,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await reading;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const ADMIN = { username: "root", password: "root-password-1" };

Deno.test(withTool(
  "three instances through PgBouncer in transaction pooling mode: logins, creates, the throttle and the streamed list work",
  PGBOUNCER_TOOL,
  async () => {
    await using db = await testDatabase();
    const serverUrl = new URL(db.env.DATABASE_URL);
    const database = serverUrl.pathname.slice(1);
    // Transaction pooling cannot carry a startup parameter to the server:
    // the statement timeout the service asks for is set on the database.
    {
      const direct = postgres(serverUrl.href, { max: 1, onnotice: () => {} });
      await direct`alter database ${
        direct(database)
      } set statement_timeout = 1500`;
      await direct.end();
    }
    await using bouncer = await startPgBouncer(serverUrl, database);

    await using instances = await startInstances(
      [1, 2, 3].map(() => ({
        DATABASE_URL: bouncer.url,
        DATABASE_PREPARE: "false",
        DATABASE_POOL_MAX: "3",
        ADMIN_USERNAME: ADMIN.username,
        ADMIN_PASSWORD: ADMIN.password,
        LOGIN_MAX_FAILURES: "3",
        REQUEST_TIMEOUT_MS: "30000",
      })),
    );
    const clients = instances.map((i) =>
      createUserAdminClient({ baseUrl: i.baseUrl })
    );

    // Logins on every instance (the first admin was created once).
    for (const api of clients) {
      const login = await api.login(ADMIN.username, ADMIN.password);
      assert(login.ok, `login: ${login.ok || login.error}`);
    }

    // Creates through every instance, each seen by the others.
    const created: Account[] = [];
    for (const [n, api] of clients.entries()) {
      const res = await api.post("/api/users", {
        body: {
          username: `bouncer${n}`,
          name: `Bouncer ${n}`,
          email: `bouncer${n}@example.com`,
          password: `password-${n}-long`,
          role: "viewer",
        },
      });
      assert(res.ok, `create: ${res.ok || res.error}`);
      created.push(res.data);
    }
    const dup = await clients[2].post("/api/users", {
      body: {
        username: "BOUNCER0",
        name: "Again",
        email: "other@example.com",
        password: "password-x-long",
        role: "viewer",
      },
    });
    assertEquals([dup.ok, dup.status], [false, 409]);
    for (const [n, account] of created.entries()) {
      const other = clients[(n + 1) % 3];
      const got = await other.get("/api/users/{id}", {
        params: { path: { id: account.id } },
      });
      assert(got.ok);
      assertEquals(got.data.username, `bouncer${n}`);
      // That user logs in on yet another instance.
      const own = createUserAdminClient({
        baseUrl: instances[(n + 2) % 3].baseUrl,
      });
      assertEquals(
        (await own.login(`bouncer${n}`, `password-${n}-long`)).status,
        200,
      );
    }

    // The throttle counts across instances: three failures, then 429 even
    // for the right password, wherever it is tried.
    const fresh = () =>
      instances.map((i) => createUserAdminClient({ baseUrl: i.baseUrl }));
    const [a, b, c] = fresh();
    assertEquals((await a.login("bouncer1", "wrong-password-1")).status, 401);
    assertEquals((await b.login("bouncer1", "wrong-password-2")).status, 401);
    assertEquals((await c.login("bouncer1", "wrong-password-3")).status, 401);
    assertEquals((await a.login("bouncer1", "password-1-long")).status, 429);
    assertEquals((await b.login("bouncer1", "password-1-long")).status, 429);

    // The list, long enough to be streamed in more than two batches.
    {
      const direct = postgres(serverUrl.href, { max: 1, onnotice: () => {} });
      await seedUsers(direct, BULK_USERS);
      await direct.end();
    }
    const total = 1 + created.length + BULK_USERS;
    const lists = await Promise.all(
      clients.map((api: UserAdminClient) => api.get("/api/users")),
    );
    for (const list of lists) {
      assert(list.ok, `list: ${list.ok || list.error}`);
      assertEquals(list.data.length, total);
      assertEquals(new Set(list.data.map((u) => u.id)).size, total);
      assertEquals(list.data[0].username, ADMIN.username);
      assertEquals(list.data.at(-1)!.username, `bulk${BULK_USERS}`);
    }
    // And all of it went through PgBouncer.
    assert(bouncer.log().includes(database), bouncer.log());
  },
));
