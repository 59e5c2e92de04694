/**
 * A real service for one test: its own database (a fresh PostgreSQL
 * database on DATABASE_URL's server, or a fresh embedded PGlite), started
 * by startService as main.ts starts it, on a free port, and typed clients.
 * Every response that passes through it is checked for secrets on close.
 */
import postgres, { type Sql, type TransactionSql } from "postgres";
import {
  type Account,
  createUserAdminClient,
  type Role,
  type UserAdminClient,
} from "@user-admin/client";
import { type App, createApp } from "../../src/app.ts";
import { createPasswordHasher } from "../../src/auth/passwords.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import { connect, openDatabase } from "../../src/db/database.ts";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";
import type { Store } from "../../src/db/store.ts";
import { createLogger } from "../../src/log.ts";
import { type Service, startService as startReal } from "../../src/server.ts";
import { freePort } from "./process.ts";
import { databasePrefix } from "./test-run.ts";

export const ADMIN = { username: "admin", password: "admin-pass-1234" };

const SERVER_URL = Deno.env.get("DATABASE_URL");
export const ON_EMBEDDED = !SERVER_URL;
/** What the names of the databases tests make on the server start with. */
const DATABASES = databasePrefix();

export interface TestDatabase extends AsyncDisposable {
  /** Environment that points the service at it. */
  env: Record<string, string>;
}

/**
 * A migrated database of the test's own, reached at `url`: on the
 * embedded database, a server started on its directory, which takes one
 * connection at a time. Close connections to it before it is disposed.
 */
export async function migratedDatabaseUrl(): Promise<
  AsyncDisposable & { url: string }
> {
  const database = await testDatabase("migrated");
  const embedded = database.env.DATA_DIR
    ? await startEmbeddedPostgres(database.env.DATA_DIR)
    : undefined;
  return {
    url: embedded?.url ?? database.env.DATABASE_URL,
    async [Symbol.asyncDispose]() {
      await embedded?.close();
      await database[Symbol.asyncDispose]();
    },
  };
}

/**
 * What a test's database holds at the start: `empty` (on the embedded
 * database the same as `migrated`: PGlite's initdb is the slow part, so it
 * is never done per test); `migrated`, the schema in place and no rows;
 * `first-admin`, as a first start with ADMIN leaves it (migrated, ADMIN
 * created by the service's own startup, its audit record).
 */
/** SQL on a test database that no service has open (PGlite has one owner). */
export async function onDatabase<T>(
  env: Record<string, string>,
  body: (sql: Sql) => Promise<T>,
): Promise<T> {
  if (env.DATABASE_URL) {
    const sql = connect(env.DATABASE_URL, { max: 1, prepare: true });
    try {
      return await body(sql);
    } finally {
      await sql.end();
    }
  }
  const embedded = await startEmbeddedPostgres(env.DATA_DIR);
  const sql = connect(embedded.url, { max: 1, prepare: true });
  try {
    return await body(sql);
  } finally {
    await sql.end();
    await embedded.close();
  }
}

export type Contents = "empty" | "migrated" | "first-admin";

/** A database of its own for one test, holding `contents`. */
export async function testDatabase(
  contents: Contents = "empty",
): Promise<TestDatabase> {
  if (!SERVER_URL) {
    if (embeddedStarted++ > 0) collectGarbage();
    const dir = await Deno.makeTempDir({ prefix: "user-admin-test-" });
    await copyDir(
      await embeddedTemplate(contents === "empty" ? "migrated" : contents),
      dir,
    );
    return {
      env: { DATA_DIR: dir },
      [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
    };
  }
  const name = `${DATABASES}test_${crypto.randomUUID().replaceAll("-", "")}`;
  const from = contents === "empty"
    ? "template1"
    : await serverTemplate(contents);
  await onServer(async (sql) => {
    await sql`create database ${sql(name)} template ${sql(from)}`;
    // Commits answer before their WAL reaches the disk: only a crash of the
    // server itself could lose them, and a test's database outlives no such
    // crash. Each commit otherwise waits for an fsync.
    await sql`alter database ${sql(name)} set synchronous_commit = off`;
  });
  return {
    env: { DATABASE_URL: databaseUrl(SERVER_URL, name) },
    async [Symbol.asyncDispose]() {
      await onServer((sql) =>
        sql`drop database if exists ${sql(name)} with (force)`
      );
    },
  };
}

/**
 * A full garbage collection, when deno runs with --v8-flags=--expose-gc (as
 * `deno task test` does): before another embedded database starts, the
 * memory of those closed since (each PGlite holds hundreds of MiB of
 * WebAssembly memory) goes back to the system at once, not when the
 * collector next gets to it, so a file that starts several holds about one.
 */
export const collectGarbage = () => (globalThis as { gc?: () => void }).gc?.();

/** Embedded databases this isolate has started (the first needs no collection before it). */
let embeddedStarted = 0;

let serverConnection: Sql | undefined;

/**
 * Runs statements on the server's own database (create, rename, drop) over
 * one connection per test file, opened on first use and closed with the
 * file's isolate: a connection per statement would start a server backend
 * twice per test database.
 */
function onServer<T>(statements: (sql: Sql) => Promise<T>): Promise<T> {
  serverConnection ??= postgres(SERVER_URL!, { max: 1, onnotice: () => {} });
  return statements(serverConnection);
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

/*
 * Templates: each kind of contents made once and copied for every test
 * that asks for it, shared by all the test files of a `deno task test` run
 * (each runs in an isolate of its own), which removes them when it ends
 * (tests/support/test-run.ts), and kept by direct `deno test` starts for
 * the next while what they hold stays the same. A template is made whole
 * or not at all (renamed into place, which fails if another file or run
 * made it first), and a new one replaces the older ones of its kind but
 * the newest TEMPLATES_KEPT. `migrated` depends on the
 * migrations and PGlite; `first-admin` also on the service's code
 * (bootstrap, store, audit chain), so it is made from `migrated` by
 * starting the service once.
 */
type Template = Exclude<Contents, "empty">;

/**
 * Templates of each kind kept, the newest: runs of different code at the
 * same time (two checkouts, CI beside a developer) each keep their own,
 * where dropping all but the newest made one run drop the template the
 * other was copying from.
 */
const TEMPLATES_KEPT = 8;

/**
 * How the harness starts a service (its database and a test's settings
 * added): the `first-admin` template is its first start.
 */
const HARNESS_ENV = {
  HOST: "127.0.0.1",
  PORT: "0",
  // What production sweeps every ten minutes runs all through every test,
  // over whatever records the test leaves, of every age.
  HOUSEKEEPING_INTERVAL_MS: "250",
  ADMIN_USERNAME: ADMIN.username,
  ADMIN_PASSWORD: ADMIN.password,
};

/** Brings a database made from `migrated` to `first-admin`: a first start. */
async function firstStart(env: Record<string, string>) {
  const config = loadConfig({ ...HARNESS_ENV, LOG_LEVEL: "silent", ...env });
  const service = await startReal(config, {
    log: createLogger(config.LOG_LEVEL, () => {}),
  });
  await service.close();
}

/** `make` called once per kind of template in this isolate; its promise kept. */
function oncePerKind(
  make: (kind: Template) => Promise<string>,
): (kind: Template) => Promise<string> {
  const made = new Map<Template, Promise<string>>();
  return (kind) => {
    let template = made.get(kind);
    if (!template) made.set(kind, template = make(kind));
    return template;
  };
}

/** The name of a template database on SERVER_URL's server. */
const serverTemplate = oncePerKind(async (kind) => {
  const prefix = `${DATABASES}template_${kind.replace("-", "_")}_`;
  const name = `${prefix}${await templateKey(kind)}`;
  const ofKind = () =>
    onServer((sql) =>
      sql<{ datname: string }[]>`
        select datname from pg_database where datname like ${prefix + "%"}
        order by oid desc`
    );
  if ((await ofKind()).some((row) => row.datname === name)) return name;
  const building = `${DATABASES}building_${
    crypto.randomUUID().replaceAll("-", "")
  }`;
  const url = databaseUrl(SERVER_URL!, building);
  try {
    if (kind === "migrated") {
      await onServer((sql) => sql`create database ${sql(building)}`);
      await (await openDatabase(loadConfig({ DATABASE_URL: url }))).close();
    } else {
      const from = await serverTemplate("migrated");
      await onServer((sql) =>
        sql`create database ${sql(building)} template ${sql(from)}`
      );
      await firstStart({ DATABASE_URL: url });
    }
    await onServer(
      (sql) => sql`alter database ${sql(building)} rename to ${sql(name)}`,
    );
  } catch (e) {
    await onServer(
      (sql) => sql`drop database if exists ${sql(building)} with (force)`,
    );
    const made = await onServer(
      (sql) => sql`select 1 from pg_database where datname = ${name}`,
    );
    if (made.length === 0) throw e;
    return name;
  }
  // OIDs grow with each database made: the newest come first.
  for (const { datname } of (await ofKind()).slice(TEMPLATES_KEPT)) {
    await onServer(
      (sql) => sql`drop database if exists ${sql(datname)}`,
    ).catch(() => {/* being copied by a run of older code: left for later */});
  }
  return name;
});

/** The directory of a template PGlite data directory. */
const embeddedTemplate = oncePerKind(async (kind) => {
  const prefix = `user-admin-template-${kind}-`;
  const dir = `${tmpDir()}/${prefix}${await templateKey(kind)}`;
  if (await exists(`${dir}/PG_VERSION`)) return dir;
  const building = await Deno.makeTempDir({
    prefix: "user-admin-template-building-",
  });
  try {
    if (kind === "migrated") {
      await (await openDatabase(loadConfig({ DATA_DIR: building }))).close();
    } else {
      await copyDir(await embeddedTemplate("migrated"), building);
      await firstStart({ DATA_DIR: building });
    }
    await Deno.rename(building, dir);
  } catch (e) {
    await Deno.remove(building, { recursive: true });
    if (!await exists(`${dir}/PG_VERSION`)) throw e;
    return dir;
  }
  const ofKind = [];
  for await (const entry of Deno.readDir(tmpDir())) {
    if (!entry.name.startsWith(prefix)) continue;
    const path = `${tmpDir()}/${entry.name}`;
    const made = await Deno.stat(path).then(
      (s) => s.mtime?.getTime() ?? 0,
      () => 0, // gone meanwhile
    );
    ofKind.push({ path, made });
  }
  ofKind.sort((a, b) => b.made - a.made);
  for (const { path } of ofKind.slice(TEMPLATES_KEPT)) {
    if (path === dir) continue;
    await Deno.remove(path, { recursive: true })
      .catch(() => {/* another run's, going away by itself */});
  }
  return dir;
});

const tmpDir = () => Deno.env.get("TMPDIR") || "/tmp";

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

const ROOT = new URL("../../", import.meta.url);

/** What a template's contents depend on (see Template). */
async function templateKey(kind: Template): Promise<string> {
  const parts: string[] = [];
  const addDir = async (dir: URL) => {
    const entries = await Array.fromAsync(Deno.readDir(dir));
    for (const entry of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
      const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
      if (entry.isDirectory) await addDir(url);
      else {
        const path = url.pathname.slice(ROOT.pathname.length);
        parts.push(path, await Deno.readTextFile(url));
      }
    }
  };
  await addDir(
    new URL(kind === "migrated" ? "src/db/migrations/" : "src/", ROOT),
  );
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  parts.push(config.imports["@electric-sql/pglite"]);
  if (kind === "first-admin") parts.push(JSON.stringify(HARNESS_ENV));
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(parts.join("\0")),
  );
  return [...new Uint8Array(digest).slice(0, 8)]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function copyDir(from: string, to: string) {
  const cp = await new Deno.Command("cp", { args: ["-a", `${from}/.`, to] })
    .output();
  if (!cp.success) throw new Error(new TextDecoder().decode(cp.stderr));
}

export interface TestService extends AsyncDisposable {
  /** A real port: for what only the wire shows (framing, streaming, sockets). */
  baseUrl: string;
  /** Where /metrics answers, when METRICS_PORT is set ("0": a free port). */
  metricsUrl?: string;
  app: App;
  store: Store;
  sql: Sql;
  config: Config;
  /** Every log line the service wrote, parsed. */
  logs: Record<string, unknown>[];
  /**
   * fetch against the service, recorded for the secrets check: over the
   * port, or in-process through `app.fetch` (see ServiceOptions).
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The same, with the session cookie of `admin` (the first admin's). */
  adminFetch(path: string, init?: RequestInit): Promise<Response>;
  /** A new client with a cookie jar of its own, on the same transport. */
  client(): UserAdminClient;
  /** A client logged in as the first admin. */
  admin: UserAdminClient;
  adminAccount: Account;
  /** Creates a user through the API and returns a client logged in as them. */
  userClient(
    role: Role,
    fields?: Partial<{ username: string; email: string; password: string }>,
  ): Promise<{ client: UserAdminClient; account: Account; password: string }>;
  /**
   * The same app built again with these settings over the service's own,
   * on the same database and store, answering in-process: for a setting an
   * app reads per request (cookies, throttle, proxy trust, session length)
   * without a database and a start of its own. Settings read at startup
   * (the database, ports, first admin) need startService.
   */
  configured(env: Record<string, string>): ConfiguredApp;
}

/** An app of other settings on a service's database (TestService.configured). */
export interface ConfiguredApp {
  app: App;
  config: Config;
  /** fetch against it in-process, recorded for the secrets check. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A new client with a cookie jar of its own. */
  client(): UserAdminClient;
}

export interface ServiceOptions {
  /**
   * Requests of `fetch`, `adminFetch` and the clients go to `app.fetch` in
   * this process, with the connection info Deno.serve would give (loopback),
   * instead of over the port: the same app, the same database, no sockets.
   * The port still listens for the tests that need the wire.
   */
  inProcess?: boolean;
  /**
   * bcrypt's cost for the service's hashes and checks (its dummy hash and
   * the first admin's password included), below the floor of 10 that
   * BCRYPT_COST allows an operator: for tests whose subject is not bcrypt,
   * where a hash at 10 is 64 times the work of one at 4.
   * Tests of bcrypt's work, or of races that its duration opens, keep the
   * service's own cost.
   */
  bcryptCost?: number;
}

/** What Deno.serve hands the app for a loopback client. */
const LOOPBACK: Deno.ServeHandlerInfo<Deno.NetAddr> = {
  remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 40_000 },
  completed: Promise.resolve(),
};

let counter = 0;

/** A service of the test's own, on a database of its own; dispose it at the end. */
export async function startService(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<TestService> {
  return (await start(env, options)).service;
}

/**
 * A service of the test's own on http://localhost:PORT, which PUBLIC_URL
 * names: the relying party of its passkeys (WebAuthn takes a host name,
 * never an address) and a secure context for the browser.
 */
export async function startServiceOnLocalhost(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<{ svc: TestService; origin: string }> {
  const port = freePort();
  const origin = `http://localhost:${port}`;
  const svc = await startService(
    { ...env, PORT: String(port), PUBLIC_URL: origin },
    options,
  );
  return { svc, origin };
}

/**
 * One service for all the tests of a file that call it, started by the
 * first of them and stopped after the last (Deno.test.afterAll). Before
 * each test the database is put back as it was after startup: only the
 * first admin, its sessions and its row as they were, no login failures,
 * no log lines. After each test, the responses it saw are checked for
 * secrets. Tests that change the schema restore it themselves; the first
 * admin must not be deleted (a test that does so starts its own service).
 *
 * Call it at the top of the file, before its tests: it turns off the
 * resource and op sanitizers for the tests registered after it, since the
 * service outlives each of them by design.
 */
export function sharedService(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): () => Promise<TestService> {
  options = { inProcess: true, ...options };
  let started: ReturnType<typeof start> | undefined;
  Deno.test.sanitizer({ ops: false, resources: false });
  Deno.test.beforeEach(async () => {
    if (started) await (await started).reset();
  });
  Deno.test.afterEach(async () => {
    if (started) (await started).recorder.assertNoSecrets({ clear: true });
  });
  Deno.test.afterAll(async () => {
    if (started) await (await started).service[Symbol.asyncDispose]();
  });
  return async () => (await (started ??= start(env, options))).service;
}

async function start(env: Record<string, string>, options: ServiceOptions) {
  const database = await testDatabase("first-admin");
  const fullEnv = {
    ...HARNESS_ENV,
    LOG_LEVEL: "debug",
    ...database.env,
    ...env,
  };
  const configure = (env: Record<string, string>) => {
    const config = loadConfig(env);
    if (options.bcryptCost !== undefined && !("BCRYPT_COST" in env)) {
      config.BCRYPT_COST = options.bcryptCost;
    }
    return config;
  };
  const config = configure(fullEnv);
  const logs: Record<string, unknown>[] = [];
  const log = createLogger(
    config.LOG_LEVEL,
    (line) => logs.push(JSON.parse(line)),
  );
  let running: Service | undefined;
  try {
    running = await startReal(config, { log });
    const { app, store, sql, url: baseUrl } = running;
    if (options.bcryptCost !== undefined) {
      const hash = await createPasswordHasher(config.BCRYPT_COST)
        .hash(ADMIN.password);
      await sql`
        update users set password_hash = ${hash}
        where username = ${ADMIN.username}`;
    }
    const recorder = new SecretsRecorder(
      options.inProcess
        ? (request) => Promise.resolve(app.fetch(request, LOOPBACK))
        : fetch,
    );
    const recordedFetch = (request: Request) => recorder.fetch(request);
    const client = () =>
      createUserAdminClient({ baseUrl, fetch: recordedFetch });
    // One login (a bcrypt check) for both: adminFetch sends the cookie the
    // admin client's login set.
    let adminCookie = "";
    const admin = createUserAdminClient({
      baseUrl,
      fetch: async (request) => {
        const res = await recordedFetch(request);
        const token = sidOf(res);
        if (token) adminCookie = `sid=${token}`;
        return res;
      },
    });
    const login = await admin.login(ADMIN.username, ADMIN.password);
    if (!login.ok) throw new Error(`admin login failed: ${login.error}`);

    const raw = (path: string, init?: RequestInit) =>
      recorder.fetch(new Request(baseUrl + path, init));

    // The state every test of a shared service starts from.
    const adminId = login.data.id;
    const [{ id: _, ...adminRow }] = await sql<Record<string, unknown>[]>`
      select * from users where id = ${adminId}`;
    const adminSessions = await sql<Record<string, unknown>[]>`
      select * from sessions where user_id = ${adminId}`;
    const reset = () =>
      sql.begin(async (tx) => {
        await tx`delete from users where id <> ${adminId}`;
        await tx`delete from sessions`;
        await tx`delete from login_failures`;
        await tx`delete from api_keys`;
        await tx`delete from idempotency_keys`;
        const restored = await tx`update users set ${
          tx(adminRow)
        } where id = ${adminId}`;
        if (restored.count !== 1) {
          throw new Error(
            "a test deleted the shared service's first admin: give it a startService() of its own",
          );
        }
        await tx`insert into sessions ${tx([...adminSessions])}`;
        logs.length = 0;
      });

    const openService = running;
    const service: TestService = {
      baseUrl,
      metricsUrl: running.metricsUrl,
      app,
      store,
      sql,
      config,
      logs,
      fetch: raw,
      adminFetch(path, init = {}) {
        const headers = new Headers(init.headers);
        headers.set("cookie", adminCookie);
        return raw(path, { ...init, headers });
      },
      client,
      admin,
      adminAccount: login.data,
      async userClient(role, fields = {}) {
        const n = ++counter;
        const password = fields.password ?? `password-${n}-${role}`;
        const created = await admin.POST("/api/users", {
          body: {
            username: fields.username ?? `${role}${n}`,
            name: `Test ${role} ${n}`,
            email: fields.email ?? `${role}${n}@example.com`,
            password,
            role,
          },
        });
        if (!created.data) {
          throw new Error(`create failed: ${created.error?.error}`);
        }
        const c = client();
        const login = await c.login(created.data.username, password);
        if (!login.ok) throw new Error(`login failed: ${login.error}`);
        return { client: c, account: login.data, password };
      },
      configured(extra) {
        const config = configure({ ...fullEnv, ...extra });
        const other = createApp({ store, config, log });
        const send = (request: Request) =>
          Promise.resolve(other.fetch(request, LOOPBACK));
        const fetch = (path: string, init?: RequestInit) =>
          recorder.fetch(new Request(baseUrl + path, init), send);
        return {
          app: other,
          config,
          fetch,
          client: () =>
            createUserAdminClient({
              baseUrl,
              fetch: (request) => recorder.fetch(request, send),
            }),
        };
      },
      async [Symbol.asyncDispose]() {
        await openService.close();
        await database[Symbol.asyncDispose]();
        recorder.assertNoSecrets();
      },
    };
    return { service, reset, recorder };
  } catch (e) {
    await running?.close();
    await database[Symbol.asyncDispose]();
    throw e;
  }
}

/** Logs in over HTTP and answers the new session's cookie (`sid=...`). */
export async function loginCookie(
  svc: Pick<TestService, "fetch">,
  credentials: { username: string; password: string } = ADMIN,
): Promise<string> {
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify(credentials),
  });
  const body = await res.text();
  const token = sidOf(res);
  if (res.status !== 200 || !token) {
    throw new Error(`login as ${credentials.username}: ${res.status} ${body}`);
  }
  return `sid=${token}`;
}

/** The session token a response's Set-Cookie sets, if any. */
export const sidOf = (res: Response): string | undefined =>
  /^sid=([^;]*)/.exec(
    res.headers.getSetCookie().find((c) => c.startsWith("sid=")) ?? "",
  )?.[1];

/** A valid creation body for a viewer of this username. */
export const newUser = (name: string, password = `${name}-password`) => ({
  username: name,
  name,
  email: `${name}@example.com`,
  password,
  role: "viewer" as const,
});

/** How many users the service's database holds. */
export async function userCount(svc: Pick<TestService, "sql">) {
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from users`;
  return n;
}

/**
 * Holds an exclusive lock on the tables from a connection of `sql`'s pool
 * (or of the test's own) until the returned release is called: every query
 * that reads them stalls meanwhile.
 */
export const holdLock = (sql: Sql, tables: string[]) =>
  holdLocks(
    sql,
    (tx) => tx`lock table ${tx(tables)} in access exclusive mode`,
  );

/**
 * Holds whatever locks `lock` takes (rows `for update`, tables) in a
 * transaction of its own until the returned release is called.
 */
export async function holdLocks(
  sql: Sql,
  lock: (tx: TransactionSql) => Promise<unknown>,
): Promise<{ release(): Promise<void> }> {
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const { promise: locked, resolve: isLocked } = Promise.withResolvers<void>();
  const holding = sql.begin(async (tx) => {
    await lock(tx);
    isLocked();
    await released;
  });
  await Promise.race([locked, holding]);
  return {
    async release() {
      release();
      await holding;
    },
  };
}

/** Waits until `n` of this database's backends wait for a lock. */
export async function lockWaiters(sql: Sql, n: number) {
  for (let i = 0; i < 500; i++) {
    const [{ waiting }] = await sql<{ waiting: number }[]>`
      select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if (waiting >= n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`fewer than ${n} requests ever waited for a lock`);
}

const BCRYPT_HASH = /\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}/;

/**
 * Sees every request and response of a test: remembers each password sent
 * and fails the test if any response (headers or body) shows one of them or
 * any bcrypt hash.
 */
class SecretsRecorder {
  #passwords = new Set<string>();
  /** What requests sent to be shown (usernames, names, e-mails). */
  #shown = new Set<string>();
  #responses: { what: string; text: string }[] = [];

  constructor(readonly send: (request: Request) => Promise<Response>) {}

  async fetch(
    request: Request,
    send: (request: Request) => Promise<Response> = this.send,
  ): Promise<Response> {
    if (request.body) {
      const text = await request.clone().text();
      try {
        const body = JSON.parse(text);
        if (typeof body?.password === "string" && body.password.length >= 8) {
          this.#passwords.add(body.password);
        }
        for (const key of ["username", "name", "email"]) {
          if (typeof body?.[key] === "string") this.#shown.add(body[key]);
        }
      } catch { /* not JSON: nothing to remember */ }
    }
    const response = await send(request);
    const text = await response.clone().text();
    const headers = [...response.headers].map(([k, v]) => `${k}: ${v}`).join(
      "\n",
    );
    this.#responses.push({
      what: `${request.method} ${
        new URL(request.url).pathname
      } -> ${response.status}`,
      text: `${headers}\n\n${text}`,
    });
    return response;
  }

  /**
   * With `clear`, forgets what it saw: the next test starts afresh (another
   * test's password may well be part of this one's usernames).
   */
  assertNoSecrets({ clear = false } = {}) {
    const responses = this.#responses;
    // A password that was also sent as a name to show cannot be told from
    // it (property tests generate "constructor" for both, say): not checked.
    const shown = [...this.#shown];
    const passwords = [...this.#passwords].filter((p) =>
      !shown.some((s) => s.includes(p))
    );
    if (clear) {
      this.#responses = [];
      this.#passwords.clear();
      this.#shown.clear();
    }
    for (const { what, text } of responses) {
      if (BCRYPT_HASH.test(text)) {
        throw new Error(`${what} shows a bcrypt hash`);
      }
      for (const password of passwords) {
        if (text.includes(password)) {
          throw new Error(`${what} shows a password that was sent`);
        }
      }
    }
  }
}
