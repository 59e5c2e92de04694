/**
 * A real service for one test: its own database (a fresh PostgreSQL
 * database on DATABASE_URL's server, or a fresh embedded PGlite), started
 * by startService as main.ts starts it, on a free port, and typed clients.
 * Every response that passes through it is checked for secrets on close.
 */
import postgres, { type Sql } from "postgres";
import {
  type Account,
  createUserAdminClient,
  type Role,
  type UserAdminClient,
} from "@user-admin/client";
import type { App } from "../../src/app.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import { openDatabase } from "../../src/db/database.ts";
import type { Store } from "../../src/db/store.ts";
import { createLogger } from "../../src/log.ts";
import { type Service, startService as start } from "../../src/server.ts";

export const ADMIN = { username: "admin", password: "admin-pass-1234" };

const SERVER_URL = Deno.env.get("DATABASE_URL");
export const ON_EMBEDDED = !SERVER_URL;

export interface TestDatabase extends AsyncDisposable {
  /** Environment that points the service at it. */
  env: Record<string, string>;
}

/** An empty database of its own for one test. */
export async function testDatabase(): Promise<TestDatabase> {
  if (!SERVER_URL) {
    const dir = await Deno.makeTempDir({ prefix: "user-admin-test-" });
    await copyDir(await embeddedTemplate(), dir);
    return {
      env: { DATA_DIR: dir },
      [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
    };
  }
  const name = `ua_test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} });
  try {
    await admin`create database ${admin(name)}`;
  } finally {
    await admin.end();
  }
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: url.href },
    async [Symbol.asyncDispose]() {
      const admin = postgres(SERVER_URL, { max: 1, onnotice: () => {} });
      try {
        await admin`drop database if exists ${admin(name)} with (force)`;
      } finally {
        await admin.end();
      }
    },
  };
}

let template: Promise<string> | undefined;

/**
 * A PGlite data directory made and migrated once per test process: copying
 * it is much faster than PGlite's initdb for every test.
 */
function embeddedTemplate(): Promise<string> {
  return template ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "user-admin-template-" });
    const db = await openDatabase(loadConfig({ DATA_DIR: dir }));
    await db.close();
    globalThis.addEventListener(
      "unload",
      () => Deno.removeSync(dir, { recursive: true }),
    );
    return dir;
  })();
}

async function copyDir(from: string, to: string) {
  const cp = await new Deno.Command("cp", { args: ["-a", `${from}/.`, to] })
    .output();
  if (!cp.success) throw new Error(new TextDecoder().decode(cp.stderr));
}

export interface TestService extends AsyncDisposable {
  baseUrl: string;
  /** Where /metrics answers, when METRICS_PORT is set ("0": a free port). */
  metricsUrl?: string;
  app: App;
  store: Store;
  sql: Sql;
  config: Config;
  /** Every log line the service wrote, parsed. */
  logs: Record<string, unknown>[];
  /** fetch against the service, recorded for the secrets check. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** The same, with a session cookie of the first admin (its own session). */
  adminFetch(path: string, init?: RequestInit): Promise<Response>;
  /** A new client with a cookie jar of its own. */
  client(): UserAdminClient;
  /** A client logged in as the first admin. */
  admin: UserAdminClient;
  adminAccount: Account;
  /** Creates a user through the API and returns a client logged in as them. */
  userClient(
    role: Role,
    fields?: Partial<{ username: string; email: string; password: string }>,
  ): Promise<{ client: UserAdminClient; account: Account; password: string }>;
}

let counter = 0;

export async function startService(
  env: Record<string, string> = {},
): Promise<TestService> {
  const database = await testDatabase();
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    ADMIN_USERNAME: ADMIN.username,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: "debug",
    ...database.env,
    ...env,
  });
  const logs: Record<string, unknown>[] = [];
  const log = createLogger(
    config.LOG_LEVEL,
    (line) => logs.push(JSON.parse(line)),
  );
  let service: Service | undefined;
  try {
    service = await start(config, { log });
    const { app, store, url: baseUrl } = service;
    const recorder = new SecretsRecorder();
    const recordedFetch = (request: Request) => recorder.fetch(request);
    const client = () =>
      createUserAdminClient({ baseUrl, fetch: recordedFetch });
    const admin = client();
    const login = await admin.login(ADMIN.username, ADMIN.password);
    if (!login.ok) throw new Error(`admin login failed: ${login.error}`);

    const raw = (path: string, init?: RequestInit) =>
      recorder.fetch(new Request(baseUrl + path, init));
    const rawLogin = await raw("/api/auth/login", {
      method: "POST",
      body: JSON.stringify(ADMIN),
    });
    const adminCookie = rawLogin.headers.get("set-cookie")!.split(";")[0];
    await rawLogin.body?.cancel();

    const running = service;
    return {
      baseUrl,
      metricsUrl: service.metricsUrl,
      app,
      store,
      sql: service.sql,
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
      async [Symbol.asyncDispose]() {
        await running.close();
        await database[Symbol.asyncDispose]();
        recorder.assertNoSecrets();
      },
    };
  } catch (e) {
    await service?.close();
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
  await res.body?.cancel();
  const cookie = res.headers.get("set-cookie")?.split(";")[0];
  if (res.status !== 200 || !cookie) {
    throw new Error(`login as ${credentials.username}: ${res.status}`);
  }
  return cookie;
}

const BCRYPT_HASH = /\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}/;

/**
 * Sees every request and response of a test: remembers each password sent
 * and fails the test if any response (headers or body) shows one of them or
 * any bcrypt hash.
 */
class SecretsRecorder {
  #passwords = new Set<string>();
  #responses: { what: string; text: string }[] = [];

  async fetch(request: Request): Promise<Response> {
    if (request.body) {
      const text = await request.clone().text();
      try {
        const body = JSON.parse(text);
        if (typeof body?.password === "string" && body.password.length >= 8) {
          this.#passwords.add(body.password);
        }
      } catch { /* not JSON: nothing to remember */ }
    }
    const response = await fetch(request);
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

  assertNoSecrets() {
    for (const { what, text } of this.#responses) {
      if (BCRYPT_HASH.test(text)) {
        throw new Error(`${what} shows a bcrypt hash`);
      }
      for (const password of this.#passwords) {
        if (text.includes(password)) {
          throw new Error(`${what} shows a password that was sent`);
        }
      }
    }
  }
}
