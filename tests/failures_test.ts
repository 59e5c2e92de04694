/**
 * Any failure the contract does not name answers the endpoint's own 500
 * message, and only that: the cause goes to the log under the request id.
 * Writes fail inside the real database (a trigger refuses them after the
 * row changed), so what is left behind is read from it; reads and the
 * session lookup fail in the real store with one function replaced, the
 * way a broken connection does.
 */
import { createApp } from "../src/app.ts";
import type { Store } from "../src/db/store.ts";
import { createLogger } from "../src/log.ts";
import { assert, assertEquals } from "./support/assert.ts";
import {
  ADMIN,
  holdLock,
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

const SECRET_CAUSE = "connection to 10.0.0.7 lost: secret-internal-detail";

/** The app on the test's database, with `break_` replacing part of the store. */
function appWith(svc: TestService, break_: (store: Store) => Store) {
  const logs: Record<string, unknown>[] = [];
  const app = createApp({
    store: break_(svc.store),
    config: svc.config,
    log: createLogger("info", (line) => logs.push(JSON.parse(line))),
  });
  return { app, logs };
}

const fail = () => Promise.reject(new Error(SECRET_CAUSE));

/** Rows that never come: the cursor's first read fails, or never answers. */
const rows = (next: () => Promise<never>) => () => ({
  [Symbol.asyncIterator]: () => ({ next }),
});

const request =
  (cookie: string) => (method: string, path: string, body?: unknown) =>
    new Request(`http://localhost${path}`, {
      method,
      headers: { cookie },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

/** The service's own app and log, unbroken. */
const real = (svc: TestService) => ({ app: svc.app, logs: svc.logs });

async function expectFailure(
  app: Pick<ReturnType<typeof appWith>, "app" | "logs">,
  request: Request,
  message: string,
) {
  const res = await app.app.request(request);
  const text = await res.text();
  assertEquals(
    [res.status, JSON.parse(text)],
    [500, { error: message }],
    `${request.method} ${request.url}`,
  );
  assert(!text.includes("secret-internal-detail"));
  const id = res.headers.get("x-request-id");
  const line = app.logs.find((l) =>
    l.msg === "request failed" && l.requestId === id
  );
  assert(line, `no log line for request ${id}`);
  assertEquals((line.cause as { message: string }).message, SECRET_CAUSE);
}

Deno.test("a failure reading users answers list's and get's own 500 message and logs the cause", async () => {
  const svc = await service();
  const req = request(await loginCookie(svc));
  const broken = appWith(svc, (s) => ({
    ...s,
    users: { ...s.users, listJson: rows(fail), get: fail },
  }));
  await expectFailure(broken, req("GET", "/api/users"), "Failed to list users");
  await expectFailure(
    broken,
    req("GET", `/api/users/${svc.adminAccount.id}`),
    "Failed to get user",
  );
});

Deno.test("a write the database refuses answers create's, update's and delete's own 500 message, and leaves users and sessions as they were", async () => {
  const svc = await service();
  const req = request(await loginCookie(svc));
  const other = (await svc.userClient("viewer")).account.id;
  const snapshot = async () => ({
    users: await svc.sql`select * from users order by id`,
    // When a session was last seen is the lookup's note, not the write's.
    sessions: (await svc.sql`select * from sessions order by token_hash`)
      .map(({ last_seen_at: _, ...session }) => session),
  });
  // After the row changed (and, for a password, the sessions went), the
  // database refuses the write: the statement must be undone as a whole.
  await svc.sql.unsafe(`
    create function refuse_write() returns trigger language plpgsql as $$
    begin raise exception '${SECRET_CAUSE}'; end $$`);
  await svc.sql`
    create trigger refuse_write after insert or update or delete on users
    for each row execute function refuse_write()`;
  try {
    const before = await snapshot();
    await expectFailure(
      real(svc),
      req("POST", "/api/users", {
        username: "f",
        name: "F",
        email: "f@x.io",
        password: "password1",
        role: "viewer",
      }),
      "Failed to create user",
    );
    await expectFailure(
      real(svc),
      req("PATCH", `/api/users/${other}`, {
        role: "admin",
        password: "new-password-1",
      }),
      "Update failed",
    );
    await expectFailure(
      real(svc),
      req("DELETE", `/api/users/${other}`),
      "Delete failed",
    );
    assertEquals(await snapshot(), before);
  } finally {
    await svc.sql`drop trigger refuse_write on users`;
    await svc.sql`drop function refuse_write`;
  }
});

Deno.test("a failing session lookup answers each endpoint's own 500 message, not 401", async () => {
  const svc = await service();
  const req = request(await loginCookie(svc));
  const broken = appWith(
    svc,
    (s) => ({ ...s, sessions: { ...s.sessions, resolve: fail, revoke: fail } }),
  );
  await expectFailure(broken, req("GET", "/api/users"), "Failed to list users");
  await expectFailure(broken, req("GET", "/api/users/1"), "Failed to get user");
  await expectFailure(
    broken,
    req("POST", "/api/users", {}),
    "Failed to create user",
  );
  await expectFailure(
    broken,
    req("PATCH", "/api/users/1", {}),
    "Update failed",
  );
  await expectFailure(broken, req("DELETE", "/api/users/1"), "Delete failed");
  await expectFailure(
    broken,
    req("POST", "/api/users/1/disable"),
    "Failed to disable user",
  );
  await expectFailure(
    broken,
    req("POST", "/api/users/1/enable"),
    "Failed to enable user",
  );
  await expectFailure(
    broken,
    req("GET", "/api/users/1/sessions"),
    "Failed to list sessions",
  );
  await expectFailure(
    broken,
    req("DELETE", "/api/users/1/sessions"),
    "Failed to end sessions",
  );
  await expectFailure(
    broken,
    req("DELETE", "/api/users/1/sessions/5b0e6a2c-8f0f-4a55-9f4e-2d9b8f3c1a77"),
    "Failed to end sessions",
  );
  await expectFailure(
    broken,
    req("GET", "/api/auth/me"),
    "Internal server error",
  );
  await expectFailure(
    broken,
    req("POST", "/api/auth/logout"),
    "Internal server error",
  );
});

Deno.test("a failure during login answers 500 Login failed", async () => {
  const svc = await service();
  for (const part of ["loginThrottle", "users"] as const) {
    const broken = appWith(
      svc,
      (s) =>
        part === "users"
          ? { ...s, users: { ...s.users, findForLogin: fail } }
          : { ...s, loginThrottle: { ...s.loginThrottle, attempt: fail } },
    );
    await expectFailure(
      broken,
      new Request("http://localhost/api/auth/login", {
        method: "POST",
        body: JSON.stringify(ADMIN),
      }),
      "Login failed",
    );
  }
});

Deno.test("health answers 503 unavailable when the database does not answer", async () => {
  const svc = await service();
  const broken = appWith(svc, (s) => ({ ...s, ping: fail }));
  const res = await broken.app.request("/health");
  assertEquals([res.status, await res.json()], [503, {
    status: "unavailable",
  }]);
});

Deno.test("a request still pending after REQUEST_TIMEOUT_MS answers its endpoint's 500 message", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const hang = () => new Promise<never>(() => {});
  const logs: Record<string, unknown>[] = [];
  const app = createApp({
    store: {
      ...svc.store,
      users: { ...svc.store.users, listJson: rows(hang) },
    },
    config: { ...svc.config, REQUEST_TIMEOUT_MS: 300 },
    log: createLogger("info", (line) => logs.push(JSON.parse(line))),
  });
  const res = await app.request("/api/users", { headers: { cookie } });
  assertEquals([res.status, await res.json()], [500, {
    error: "Failed to list users",
  }]);
});

Deno.test("requests held up by a locked table answer their endpoint's 500 after REQUEST_TIMEOUT_MS, and the requests after them are served", async () => {
  const svc = await service();
  const cookie = await loginCookie(svc);
  const app = createApp({
    store: svc.store,
    config: { ...svc.config, REQUEST_TIMEOUT_MS: 300 },
    log: createLogger("info", () => {}),
  });
  const ask = async (path: string) => {
    const res = await app.request(path, { headers: { cookie } });
    return [res.status, await res.json()];
  };
  // Holding the lock of the users table stalls every query that reads it.
  const lock = await holdLock(svc.sql, ["users"]);
  try {
    const first = ask("/api/users");
    await new Promise((r) => setTimeout(r, 150));
    const [list, me] = await Promise.all([first, ask("/api/auth/me")]);
    assertEquals(list, [500, { error: "Failed to list users" }]);
    assertEquals(me, [500, { error: "Internal server error" }]);
  } finally {
    await lock.release();
  }
  assertEquals((await ask("/api/auth/me"))[0], 200);
  assertEquals((await ask("/api/users"))[0], 200);
});
