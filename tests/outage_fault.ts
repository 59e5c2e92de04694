/**
 * A real database outage, on a private PostgreSQL cluster of this test's own
 * (never the shared server): stopped under a stream of requests, replaced by
 * a port that accepts and never answers, then started again. Run with
 * `deno task test:faults`; it needs PostgreSQL's server binaries and root
 * or the postgres user.
 */
import postgres from "postgres";
import { assert, assertEquals } from "./support/assert.ts";
import { ADMIN, loginCookie, startService } from "./support/service.ts";
import {
  assertContractAnswer,
  assertWholeRows,
  settled,
  type Timed,
  timed,
  timedCreate,
} from "./support/timed.ts";

/** The server binaries of the installed PostgreSQL, whichever major version it is. */
async function pgBin(): Promise<string> {
  const versions: number[] = [];
  for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
    if (/^\d+$/.test(entry.name)) versions.push(Number(entry.name));
  }
  if (!versions.length) {
    throw new Error("no PostgreSQL server under /usr/lib/postgresql");
  }
  return `/usr/lib/postgresql/${Math.max(...versions)}/bin`;
}

interface Cluster extends AsyncDisposable {
  url: string;
  port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function run(cmd: string, args: string[]) {
  // initdb and postgres refuse to run as root.
  const asPostgres = Deno.uid() === 0;
  const out = await new Deno.Command(asPostgres ? "runuser" : cmd, {
    args: asPostgres ? ["-u", "postgres", "--", cmd, ...args] : args,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`${cmd} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

async function privateCluster(): Promise<Cluster> {
  const dir = await Deno.makeTempDir({ prefix: "user-admin-pg-" });
  if (Deno.uid() === 0) {
    const pg = await new Deno.Command("id", { args: ["-u", "postgres"] })
      .output();
    const uid = Number(new TextDecoder().decode(pg.stdout));
    await Deno.chown(dir, uid, null);
  }
  const data = `${dir}/data`;
  const bin = await pgBin();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  await run(`${bin}/initdb`, [
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "postgres",
    "--no-sync",
  ]);
  const pgCtl = (...args: string[]) =>
    run(`${bin}/pg_ctl`, ["-D", data, ...args]);
  const start = () =>
    pgCtl(
      "-w",
      "-l",
      `${dir}/log`,
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    );
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop: () => pgCtl("-w", "-m", "immediate", "stop"),
    async [Symbol.asyncDispose]() {
      await pgCtl("-w", "-m", "immediate", "stop").catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("a stopped, then unresponsive, then restarted database: every request answers in time, health says 503, and the same process recovers", async () => {
  await using cluster = await privateCluster();
  await using svc = await startService({ DATABASE_URL: cluster.url });
  const cookie = await loginCookie(svc);
  const answers: Timed[] = [];
  const created = new Set<string>();
  let n = 0;
  const round = async () => {
    const name = `outage${++n}`;
    const batch = await Promise.all([
      timed(svc, "list", "/api/users", { headers: { cookie } }),
      timed(svc, "me", "/api/auth/me", { headers: { cookie } }),
      timedCreate(svc, cookie, name),
      timed(svc, "health", "/health"),
    ]);
    if (batch[2].status === 201) created.add(name);
    answers.push(...batch);
    return batch;
  };

  for (let i = 0; i < 3; i++) await round();

  // Stopped: connections are refused.
  const stopping = cluster.stop();
  const duringStop: Timed[] = [];
  for (let i = 0; i < 3; i++) duringStop.push(...await round());
  await stopping;
  for (let i = 0; i < 3; i++) duringStop.push(...await round());
  assert(duringStop.some((a) => a.what === "health" && a.status === 503));
  assert(duringStop.some((a) => a.what === "list" && a.status === 500));

  // Unresponsive: the port accepts and never says a word. postgres.js would
  // wait 30 s to connect by default; the service bounds it.
  const blackhole = Deno.listen({ hostname: "127.0.0.1", port: cluster.port });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of blackhole) held.push(conn);
  })();
  try {
    const silent = [...await round(), ...await round()];
    for (const a of silent) {
      assert(a.status >= 500, `${a.what} ${a.status} with no database`);
    }
  } finally {
    blackhole.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
  }

  // Back: the same process serves again, without a restart.
  await cluster.start();
  let recovered = false;
  for (let i = 0; i < 20 && !recovered; i++) {
    const batch = await round();
    recovered = batch.every((a) => a.status < 500);
    if (!recovered) await new Promise((r) => setTimeout(r, 500));
  }
  assert(recovered, "the service did not recover");

  answers.forEach(assertContractAnswer);
  // No create is half there; every 201 is there.
  await assertWholeRows(svc, created);
});

Deno.test("logouts and logins answered 500 while the database is down are never applied once it is back", async () => {
  await using cluster = await privateCluster();
  // One connection: each failed connect attempt fails one waiting query,
  // and the others wait on for the next attempt.
  await using svc = await startService({
    DATABASE_URL: cluster.url,
    DATABASE_POOL_MAX: "1",
    REQUEST_TIMEOUT_MS: "2000",
    METRICS_PORT: "0",
  });
  const cookies: string[] = [];
  for (let i = 0; i < 16; i++) cookies.push(await loginCookie(svc));
  const outside = postgres(cluster.url, { max: 1, onnotice: () => {} });
  const sessions = async () => {
    const [{ n }] = await outside<{ n: number }[]>`
      select count(*)::int as n from sessions`;
    return n;
  };
  try {
    const before = await sessions();
    await cluster.stop();
    // Each waits for a connection the stopped database never gives; so do
    // wrong guesses for `ghost` between them.
    const answers = await Promise.all(
      cookies.flatMap((cookie) => [
        timed(svc, "logout", "/api/auth/logout", {
          method: "POST",
          headers: { cookie },
        }),
        timed(svc, "login", "/api/auth/login", {
          method: "POST",
          body: JSON.stringify({ username: "ghost", password: "a-guess-1" }),
        }),
      ]),
    );
    for (const a of answers) {
      assertContractAnswer(a);
      assertEquals(a.status, 500);
    }
    // Some were still waiting at their deadline (2 s), not failed at once.
    assert(
      answers.some((a) => a.ms >= 1_900),
      answers.map((a) => Math.round(a.ms)).join(" "),
    );
    await cluster.start();
    // Back: what waited in the pool's queue is let through now. Once the
    // service has no store call and no bcrypt job in flight, whatever it
    // would still apply is applied; a later login through the one
    // connection comes after anything queued on it, and nothing has changed
    // after it either.
    await settled(svc);
    const nothingApplied = async () => {
      assert(
        await sessions() >= before,
        "a logout answered 500 was applied",
      );
      const [{ guesses }] = await outside<{ guesses: number }[]>`
        select count(*)::int as guesses from login_failures
        where username_hash = sha256(convert_to('ghost', 'UTF8'))`;
      assertEquals(guesses, 0, "a login answered 500 was counted");
    };
    await nothingApplied();
    assert((await svc.admin.login(ADMIN.username, ADMIN.password)).ok);
    await nothingApplied();
    for (const cookie of cookies) {
      const me = await timed(svc, "me", "/api/auth/me", {
        headers: { cookie },
      });
      assertEquals(me.status, 200);
    }
    const logouts = await svc.admin.GET("/api/audit", {
      params: { query: { action: "logout" } },
    });
    assertEquals(logouts.data, [], "a logout answered 500 was recorded");
    const failed = await svc.admin.GET("/api/audit", {
      params: { query: { action: "login.failed" } },
    });
    assertEquals(failed.data, [], "a login answered 500 was recorded");
  } finally {
    await outside.end();
  }
});
