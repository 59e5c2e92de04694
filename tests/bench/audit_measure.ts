/**
 * What an audit record costs a write, measured apart from the full bench.
 *
 *   deno run -A tests/bench/audit_measure.ts [store|wrk|throttle|all]
 *     [--rounds 20] [--duration 2] [--connections 10] [--chunk 100]
 *     [--login-connections 4] [--base DIR]
 *     [--url postgres://postgres@127.0.0.1:5432/postgres]
 *
 * Loads compared with each other run in short slices, taking turns (the
 * order reversed every round), and each figure is the total of its slices:
 * on a shared machine whose load swings, side-by-side slices see the same
 * load, where two long runs one after the other do not.
 *
 * store: in this process, through the store, `--chunk` operations a slice,
 * 1 and 10 at once: records alone (each in its transaction, sealed after)
 * beside one-insert transactions; the PATCH transaction on one user with a
 * record (role alternates) beside without
 * (role unchanged); the same with each writer on a user of its own (users
 * writes all take the users_version row: they take turns either way); then
 * the verify walk.
 *
 * wrk: the service as a process, driven by wrk with the bench's script
 * (tests/bench/wrk.lua, `--connections`) on 200 users split between its
 * threads: PATCH /api/users/:id role alternating (a record each) beside role
 * unchanged (none), `--duration` seconds a slice, as bench.ts runs them.
 *
 * throttle: the service as a process with LOGIN_MAX_FAILURES=5: the audit
 * rows and bytes that 1,000 attempts refused with 429 from one address write
 * (after the 5 failures that lock it), then successful logins under wrk
 * (POST /api/auth/login, `--login-connections` (4: bcrypt bounds it), `--duration` s a slice, in turns)
 * beside the same on the service at `--base DIR` (another checkout of the
 * service, its `deno install` done), each on a database of its own. With
 * `--base`, the base's rows and bytes are measured as well.
 *
 * Each mode creates and drops a database of its own on that server.
 */
import postgres from "postgres";
import { hash } from "@node-rs/bcrypt";
import { auditEvents, NO_REQUEST } from "../../src/audit/events.ts";
import { isRefusal } from "../../src/refusal.ts";
import { verifyChain } from "../../src/audit/verify.ts";
import { loadConfig } from "../../src/config.ts";
import { openDatabase } from "../../src/db/database.ts";
import { createStore } from "../../src/db/store.ts";
import { type CallerWrite, NO_DEADLINE } from "../../src/db/write.ts";
import { accessOf } from "../../src/auth/permissions.ts";
import { spawnServer, spawnService } from "../support/process.ts";
import { cpuSeconds } from "./proc.ts";
import { inTurns } from "./turns.ts";
import { runWrk } from "./wrk.ts";

const flag = (name: string, fallback: string) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i < 0 ? fallback : Deno.args[i + 1];
};
const mode = Deno.args[0]?.startsWith("--") ? "all" : Deno.args[0] ?? "all";
const rounds = Number(flag("rounds", "20"));
const duration = Number(flag("duration", "2"));
const connections = Number(flag("connections", "10"));
const chunk = Number(flag("chunk", "100"));
const server = new URL(
  flag("url", "postgres://postgres@127.0.0.1:5432/postgres"),
);
const ADMIN = { username: "measure-admin", password: "measure-password" };
const base = Deno.args.includes("--base") ? flag("base", "") : undefined;
const loginConnections = Number(flag("login-connections", "4"));

const loadAverage = async () =>
  (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");

/** A slice's work and time. */
interface Slice {
  ops: number;
  seconds: number;
}

/** Each load's total rate per second over its slices, taken in turns (turns.ts). */
async function sideBySide(
  loads: Record<string, () => Promise<Slice>>,
): Promise<Record<string, number>> {
  const slices = await inTurns(loads, rounds);
  return Object.fromEntries(
    Object.entries(slices).map(([n, s]) => [
      n,
      s.reduce((ops, x) => ops + x.ops, 0) /
      s.reduce((seconds, x) => seconds + x.seconds, 0),
    ]),
  );
}

/** `chunk` calls of `write`, `concurrency` at a time. */
const slice = (
  concurrency: number,
  write: (i: number, worker: number) => Promise<unknown>,
) =>
async (): Promise<Slice> => {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (next < chunk) await write(next++, worker);
    }),
  );
  return { ops: chunk, seconds: (performance.now() - started) / 1000 };
};

const ratio = (a: number, b: number) =>
  `${Math.round(a)}/s beside ${Math.round(b)}/s: ${(a / b).toFixed(2)}`;

async function storeFigures(databaseUrl: string) {
  const db = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }));
  try {
    const store = createStore(db.sql);
    await db.sql`
      create table scratch (id serial primary key, t timestamptz default now())`;
    const event = auditEvents.roleChanged(
      { id: 1, username: "a" },
      { id: 2, username: "b" },
      "viewer",
      "admin",
      { requestId: "r", clientAddress: "127.0.0.1", via: "api" },
    );
    const passwordHash = await hash("measure-password", 4);
    const person = (username: string, role: "admin" | "viewer") => ({
      username,
      name: username,
      email: `${username}@example.com`,
      role,
      passwordHash,
    });
    const admin = await store.users.createFirst(
      person("admin", "admin"),
      "generated",
      NO_DEADLINE,
    );
    const targets: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = await store.users.createFirst(
        person(`t${i}`, "viewer"),
        "generated",
        NO_DEADLINE,
      );
      if (isRefusal(t)) throw new Error("seed failed");
      targets.push(t.id);
    }
    if (isRefusal(admin)) throw new Error("seed failed");
    const token = crypto.getRandomValues(new Uint8Array(32));
    await store.sessions.create(
      token,
      { ...admin, passwordVersion: 0 },
      3600,
      { usernameHash: token, address: "127.0.0.1" },
      { clientAddress: null, userAgent: null },
      NO_REQUEST,
      NO_DEADLINE,
    );
    const caller: CallerWrite = {
      caller: {
        account: admin,
        access: accessOf("admin", null),
        session: token,
      },
      needs: ["users:update", "admin"],
      context: { requestId: "r", clientAddress: "127.0.0.1", via: "api" },
      writeBy: NO_DEADLINE,
    };
    // Role unchanged: the same transaction, no record. Alternating: a
    // record each on a writer's own user; on one user shared by several,
    // a write may find the role it sets (as in the bench).
    const flips = new Map<number, number>();
    const patch =
      (own: boolean, audited: boolean) => (_: number, worker: number) => {
        const target = own ? targets[worker] : targets[0];
        const n = (flips.get(target) ?? 0) + 1;
        flips.set(target, n);
        return store.users.update(target, {
          role: audited && n % 2 ? "admin" : "viewer",
        }, caller);
      };
    for (const concurrency of [1, 10]) {
      const r = await sideBySide({
        records: slice(
          concurrency,
          () => store.audit.record(event, NO_DEADLINE),
        ),
        inserts: slice(
          concurrency,
          () => db.sql.begin((tx) => tx`insert into scratch default values`),
        ),
        audited: slice(concurrency, patch(false, true)),
        plain: slice(concurrency, patch(false, false)),
        ...(concurrency > 1
          ? {
            auditedOwn: slice(concurrency, patch(true, true)),
            plainOwn: slice(concurrency, patch(true, false)),
          }
          : {}),
      });
      console.log(`${concurrency} at once [load ${await loadAverage()}]:`);
      console.log(
        `  records (own transaction) beside one-insert transactions: ${
          ratio(r.records, r.inserts)
        }`,
      );
      console.log(
        `  PATCH role on one user, with a record beside without: ${
          ratio(r.audited, r.plain)
        }`,
      );
      if (concurrency > 1) {
        console.log(
          `  PATCH role, each writer its own user, with a record beside without: ${
            ratio(r.auditedOwn, r.plainOwn)
          }`,
        );
      }
    }
    await store.stop();
    const started = performance.now();
    const result = await store.audit.walk(verifyChain);
    console.log(
      `verify: ${result.ok ? `${result.count} records` : result.message} in ${
        Math.round(performance.now() - started)
      } ms`,
    );
  } finally {
    await db.close();
  }
}

async function wrk(
  baseUrl: string,
  sid: string,
  path: string,
  env: Record<string, string>,
): Promise<Slice> {
  const r = await runWrk({
    url: baseUrl + path,
    sid,
    connections,
    durationSeconds: duration,
    env: { BENCH_METHOD: "PATCH", ...env },
  });
  if (r.errors) throw new Error(`wrk: ${r.errors} errors`);
  return { ops: r.requests, seconds: r.durationUs / 1e6 };
}

async function wrkFigures(databaseUrl: string) {
  await using service = await spawnService({
    DATABASE_URL: databaseUrl,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
  });
  const login = await fetch(`${service.baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ADMIN),
  });
  await login.body?.cancel();
  const sid = /sid=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")![1];
  // 200 viewers, split between wrk's threads (wrk.lua's BENCH_TARGETS): no
  // two requests race on one user, so every alternating request changes a
  // role and writes one record, as in `deno task bench`.
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const passwordHash = await hash("measure-password", 10);
  const targets = (await sql<{ id: number }[]>`
    insert into users (username, username_key, name, name_key, email,
      email_key, role, password_hash)
    select 'm' || g, 'm' || g, 'M ' || g, 'm ' || g, 'm' || g || '@example.com',
      'm' || g || '@example.com', 'viewer', ${passwordHash}
    from generate_series(1, 200) g
    returning id`).map((r) => r.id);
  const path = "/api/users/";
  console.log(`wrk, ${connections} connections [load ${await loadAverage()}]`);
  await using probe = databaseProbe(databaseUrl);
  const cpu = {
    alternating: { deno: 0, postgres: 0 },
    unchanged: { deno: 0, postgres: 0 },
  };
  let records = 0;
  const run =
    (load: keyof typeof cpu, env: Record<string, string>) => async () => {
      await sql`update users set role = 'viewer' where id in ${sql(targets)}`;
      const before = {
        records: await probe.records(),
        deno: await cpuSeconds([service.pid]),
        postgres: await cpuSeconds(await probe.backends()),
      };
      const s = await wrk(service.baseUrl, sid, path, {
        ...env,
        BENCH_TARGETS: targets.join(","),
      });
      if (load === "alternating") {
        records += await probe.records() - before.records;
      }
      cpu[load].deno += await cpuSeconds([service.pid]) - before.deno;
      cpu[load].postgres += await cpuSeconds(await probe.backends()) -
        before.postgres;
      requests[load] += s.ops;
      return s;
    };
  const requests = { alternating: 0, unchanged: 0 };
  const r = await sideBySide({
    alternating: run("alternating", {
      BENCH_ALTERNATE: [
        JSON.stringify({ role: "admin" }),
        JSON.stringify({ role: "viewer" }),
      ].join("\n"),
    }),
    unchanged: run("unchanged", {
      BENCH_BODY: JSON.stringify({ role: "viewer" }),
    }),
  });
  console.log(
    `  PATCH role alternating (a record each) beside unchanged (none): ${
      ratio(r.alternating, r.unchanged)
    } [load ${await loadAverage()}]; ${
      (records / requests.alternating).toFixed(2)
    } records per alternating request`,
  );
  const ms = (load: keyof typeof cpu, of: "deno" | "postgres") =>
    (cpu[load][of] / requests[load] * 1000).toFixed(2);
  console.log(
    `  CPU ms per request, service / its PostgreSQL backends: alternating ${
      ms("alternating", "deno")
    } / ${ms("alternating", "postgres")}, unchanged ${
      ms("unchanged", "deno")
    } / ${ms("unchanged", "postgres")} (warm-up included)`,
  );
  await sql.end();
}

/** Role-change records so far, and the backends serving the service, in the database at `url`. */
function databaseProbe(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  return {
    async records() {
      // Sealed or still pending: written either way.
      const [{ n }] = await sql<{ n: number }[]>`
        select (select count(*) from audit_events
          where action = 'user.role_changed')::int +
          (select count(*) from audit_pending
          where tail like '"user.role_changed",%')::int as n`;
      return n;
    },
    async backends() {
      const rows = await sql<{ pid: number }[]>`
        select pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()`;
      return rows.map((r) => r.pid);
    },
    [Symbol.asyncDispose]: () => sql.end(),
  };
}

/** A database of its own on `server` for `run`, dropped afterwards. */
async function withDatabase(run: (url: string) => Promise<void>) {
  const name = `audit_measure_${crypto.randomUUID().replaceAll("-", "")}`;
  const owner = postgres(server.href, { max: 1, onnotice: () => {} });
  await owner`create database ${owner(name)}`;
  const url = new URL(server.href);
  url.pathname = `/${name}`;
  try {
    await run(url.href);
  } finally {
    await owner`drop database ${owner(name)} with (force)`;
    await owner.end();
  }
}

/** The service of this checkout, or of the checkout at `dir`, as a process. */
const spawnAt = (dir: string | undefined, env: Record<string, string>) =>
  dir === undefined ? spawnService(env) : spawnServer([
    "run",
    "-A",
    "--config",
    `${dir}/deno.json`,
    `${dir}/main.ts`,
  ], { HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env });

/** Audit rows and their bytes (as stored, row headers included) written by 1,000 refused logins from one address. */
async function throttledRecords(databaseUrl: string, dir?: string) {
  await using service = await spawnAt(dir, {
    DATABASE_URL: databaseUrl,
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    LOGIN_MAX_FAILURES: "5",
  });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const trail = async () => {
    const [r] = await sql<{ rows: number; bytes: number }[]>`
      select
        (select count(*) from audit_events)::int +
          (select count(*) from audit_pending)::int as rows,
        coalesce((select sum(pg_column_size(e.*)) from audit_events e), 0)::int +
          coalesce((select sum(pg_column_size(p.*)) from audit_pending p), 0)::int
          as bytes`;
    return r;
  };
  const attempt = async () => {
    const res = await fetch(`${service.baseUrl}/api/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: ADMIN.username, password: "wrong" }),
    });
    await res.body?.cancel();
    return res.status;
  };
  for (let i = 0; i < 5; i++) await attempt();
  const before = await trail();
  const statuses = new Map<number, number>();
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (next++ < 1000) {
      const status = await attempt();
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  const after = await trail();
  await sql.end();
  console.log(
    `  ${dir ?? "this checkout"}: 1,000 attempts (${
      [...statuses].map(([s, n]) => `${n} x ${s}`).join(", ")
    }) in ${seconds.toFixed(2)} s wrote ${
      after.rows - before.rows
    } audit rows, ${after.bytes - before.bytes} bytes`,
  );
}

/** Successful logins per second under wrk, this checkout beside `--base`. */
async function loginThroughput(serverUrl: string) {
  const services: Record<string, Awaited<ReturnType<typeof spawnAt>>> = {};
  const names: string[] = [];
  try {
    for (const [name, dir] of [["this", undefined], ["base", base]] as const) {
      if (name === "base" && base === undefined) continue;
      const db = `${serverUrl}_${name}`;
      const owner = postgres(server.href, { max: 1, onnotice: () => {} });
      await owner`create database ${owner(new URL(db).pathname.slice(1))}`;
      await owner.end();
      services[name] = await spawnAt(dir, {
        DATABASE_URL: db,
        ADMIN_USERNAME: ADMIN.username,
        ADMIN_PASSWORD: ADMIN.password,
      });
      names.push(name);
    }
    const slice = (name: string) => async (): Promise<Slice> => {
      const r = await runWrk({
        url: `${services[name].baseUrl}/api/auth/login`,
        sid: "none",
        connections: loginConnections,
        durationSeconds: duration,
        env: { BENCH_METHOD: "POST", BENCH_BODY: JSON.stringify(ADMIN) },
        headers: ["Content-Type: application/json"],
      });
      errors[name] += r.errors;
      // Logins that succeeded: a 500 at the deadline under load is no login.
      return { ops: r.requests - r.errors, seconds: r.durationUs / 1e6 };
    };
    const errors: Record<string, number> = { this: 0, base: 0 };
    const r = await sideBySide(
      Object.fromEntries(names.map((n) => [n, slice(n)])),
    );
    console.log(
      `  POST /api/auth/login (200), ${loginConnections} connections [load ${await loadAverage()}]: ${
        base === undefined
          ? `${Math.round(r.this)}/s`
          : `this checkout beside the base: ${ratio(r.this, r.base)}`
      } (not 200: ${
        names.map((n) => `${n} ${errors[n]}`).join(", ")
      }, warm-up included)`,
    );
  } finally {
    for (const name of names) await services[name][Symbol.asyncDispose]();
    const owner = postgres(server.href, { max: 1, onnotice: () => {} });
    for (const name of names) {
      const db = new URL(`${serverUrl}_${name}`).pathname.slice(1);
      await owner`drop database if exists ${owner(db)} with (force)`;
    }
    await owner.end();
  }
}

async function throttleFigures(databaseUrl: string) {
  console.log(`throttle [load ${await loadAverage()}]:`);
  await throttledRecords(databaseUrl);
  if (base !== undefined) {
    await withDatabase((url) => throttledRecords(url, base));
  }
  await loginThroughput(databaseUrl);
}

console.log(
  `${rounds} rounds, slices of ${chunk} operations (store) or ${duration} s (wrk)`,
);
if (mode === "store" || mode === "all") await withDatabase(storeFigures);
if (mode === "wrk" || mode === "all") await withDatabase(wrkFigures);
if (mode === "throttle" || mode === "all") {
  await withDatabase(throttleFigures);
}
