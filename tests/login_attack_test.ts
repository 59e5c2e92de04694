/**
 * Login under attack: the throttle's key and addresses, its ceiling and the
 * ways out of a lockout, passwords bcrypt cannot see whole, and logins that
 * race a password reset.
 */
import { hash } from "@node-rs/bcrypt";
import { createUserAdminClient } from "@user-admin/client";
import { createPasswordHasher } from "../src/auth/passwords.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { createAdmin } from "../src/cli/create-admin.ts";
import { runTask, spawnService } from "./support/process.ts";
import {
  ADMIN,
  type ConfiguredApp,
  sharedService,
  startService,
  testDatabase,
} from "./support/service.ts";

// What is counted is the subject, not bcrypt's work: its cheapest cost. The
// race with a password reset has a service of its own at the real cost,
// whose password check is most of the window the race needs.
const service = sharedService({}, { bcryptCost: 4 });

const TOO_MANY = { error: "Too many login attempts" };
const INVALID = { error: "Invalid username or password" };

/** A login from a client address (as a trusted proxy reports it), its status and body. */
async function login(
  svc: Pick<ConfiguredApp, "fetch">,
  username: string,
  password: string,
  from?: string,
) {
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
    headers: from ? { "x-forwarded-for": from } : {},
  });
  return {
    status: res.status,
    body: await res.json(),
    retryAfter: res.headers.get("retry-after"),
    cookie: res.headers.get("set-cookie")?.split(";")[0],
  };
}

const statusOf = async (p: ReturnType<typeof login>) => (await p).status;

Deno.test("`admİn`, `ADMİN` and fullwidth `ＡＤＭＩＮ` count as `admin`: failures for one block the others", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "3" });
  for (const name of ["admin", "admİn", "ＡＤＭＩＮ"]) {
    assertEquals(await statusOf(login(api, name, "wrong-password")), 401);
  }
  // Each spelling names the admin (the right password would log in)...
  for (const name of ["admİn", "ADMİN", "ＡＤＭＩＮ", "𝐚𝐝𝐦𝐢𝐧"]) {
    const res = await login(api, name, ADMIN.password);
    assertEquals([res.status, res.body], [429, TOO_MANY], name);
  }
  // ...and a name that differs only in `i`s is still one counter: `İ` does not
  // double the number of guesses.
  await svc.sql`delete from login_failures`; // a count from zero
  const other = svc.configured({ LOGIN_MAX_FAILURES: "2" });
  for (const name of ["admİn", "admin"]) {
    assertEquals(await statusOf(login(other, name, "wrong-password")), 401);
  }
  assertEquals(await statusOf(login(other, "admİn", ADMIN.password)), 429);
});

Deno.test("the limit holds per client address: one address locked out does not lock out another", async () => {
  const svc = await service();
  const api = svc.configured({
    LOGIN_MAX_FAILURES: "3",
    TRUST_PROXY: "true",
  });
  for (let i = 0; i < 3; i++) {
    const res = await login(api, "admin", "wrong-password", "203.0.113.7");
    assertEquals([res.status, res.body], [401, INVALID]);
  }
  const locked = await login(api, "admin", ADMIN.password, "203.0.113.7");
  assertEquals([locked.status, locked.body], [429, TOO_MANY]);
  assert(Number(locked.retryAfter) >= 1, String(locked.retryAfter));
  // The person at another address logs in; that success clears only their own count.
  const elsewhere = await login(api, "admin", ADMIN.password, "198.51.100.2");
  assertEquals(elsewhere.status, 200);
  assertEquals(
    await statusOf(login(api, "admin", ADMIN.password, "203.0.113.7")),
    429,
  );
  // The first X-Forwarded-For hop is the client; the socket's peer without TRUST_PROXY.
  assertEquals(
    await statusOf(
      login(api, "admin", ADMIN.password, "203.0.113.7, 10.0.0.1"),
    ),
    429,
  );
  await svc.sql`delete from login_failures`; // a count from zero
  const direct = svc.configured({ LOGIN_MAX_FAILURES: "2" });
  for (const from of ["192.0.2.1", "192.0.2.2"]) {
    assertEquals(
      await statusOf(login(direct, "admin", "wrong-password", from)),
      401,
    );
  }
  assertEquals(
    await statusOf(login(direct, "admin", ADMIN.password, "192.0.2.3")),
    429,
    "an untrusted X-Forwarded-For is not an address",
  );
});

Deno.test("past 10 x LOGIN_MAX_FAILURES from all addresses together, every address gets 429", async () => {
  const max = 2;
  const svc = await service();
  const api = svc.configured({
    LOGIN_MAX_FAILURES: String(max),
    TRUST_PROXY: "true",
  });
  // Distributed guessing: each address stays under its own limit.
  for (let a = 1; a <= 10; a++) {
    for (let i = 0; i < max; i++) {
      const res = await login(api, "admin", `guess-${a}-${i}`, `10.1.0.${a}`);
      assertEquals([res.status, res.body], [401, INVALID], `address ${a}`);
    }
  }
  const fresh = await login(api, "admin", ADMIN.password, "10.2.0.1");
  assertEquals([fresh.status, fresh.body], [429, TOO_MANY]);
  assert(Number(fresh.retryAfter) >= 1, String(fresh.retryAfter));
  // Other usernames are not affected.
  assertEquals(
    await statusOf(login(api, "someone-else", "wrong-password", "10.2.0.1")),
    401,
  );
});

Deno.test("an admin's password reset lifts the user's lockout from every address", async () => {
  const svc = await service();
  const api = svc.configured({
    LOGIN_MAX_FAILURES: "2",
    TRUST_PROXY: "true",
  });
  const { account, password } = await svc.userClient("viewer");
  // Locked out at the user's own address and, past the ceiling, everywhere.
  for (let a = 1; a <= 11; a++) {
    for (let i = 0; i < 2; i++) {
      await login(api, account.username, "wrong-password", `10.3.0.${a}`);
    }
  }
  assertEquals(
    await statusOf(login(api, account.username, password, "10.3.0.1")),
    429,
  );
  const reset = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "a-fresh-password" },
  });
  assertEquals(reset.response.status, 200);
  for (const from of ["10.3.0.1", "10.3.0.5", "10.4.0.1"]) {
    const res = await login(api, account.username, "a-fresh-password", from);
    assertEquals(res.status, 200, from);
  }
  // A role change alone lifts nothing.
  for (let i = 0; i < 2; i++) {
    await login(api, account.username, "wrong-password", "10.3.0.9");
  }
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { role: "admin" },
  });
  assertEquals(
    await statusOf(
      login(api, account.username, "a-fresh-password", "10.3.0.9"),
    ),
    429,
  );
});

Deno.test("deno task create-admin lifts the lockout of the name it resets, from every address and device", async () => {
  await using db = await testDatabase();
  const env = {
    ...db.env,
    ADMIN_USERNAME: "root",
    ADMIN_PASSWORD: "root-password",
    LOGIN_MAX_FAILURES: "2",
  };
  let did: string;
  {
    await using svc = await spawnService(env);
    const api = {
      fetch: (p: string, i?: RequestInit) => fetch(svc.baseUrl + p, i),
    };
    // A known device of root's, locked by its own failures.
    const known = await api.fetch("/api/auth/login", {
      method: "POST",
      body: JSON.stringify({ username: "root", password: "root-password" }),
    });
    await known.body?.cancel();
    did = /^did=([^;]*)/.exec(
      known.headers.getSetCookie().find((c) => c.startsWith("did=")) ?? "",
    )![1];
    const fromDevice = (password: string) =>
      api.fetch("/api/auth/login", {
        method: "POST",
        body: JSON.stringify({ username: "root", password }),
        headers: { cookie: `did=${did}` },
      }).then(async (res) => (await res.body?.cancel(), res.status));
    for (let i = 0; i < 2; i++) {
      assertEquals(await statusOf(login(api, "root", "wrong-password")), 401);
      assertEquals(await fromDevice("wrong-password"), 401);
    }
    assertEquals(await statusOf(login(api, "ROOT", "root-password")), 429);
    assertEquals(await fromDevice("root-password"), 429);
  }
  const reset = await runTask(createAdmin, [
    "--username",
    "Root",
    "--password",
    "rescued-password",
  ], env);
  assertEquals(reset.code, 0, reset.stderr);
  await using svc = await spawnService(env);
  const api = createUserAdminClient({ baseUrl: svc.baseUrl });
  assertEquals((await api.login("root", "rescued-password")).status, 200);
  // The device's count is cleared too.
  const device = await fetch(`${svc.baseUrl}/api/auth/login`, {
    method: "POST",
    body: JSON.stringify({ username: "root", password: "rescued-password" }),
    headers: { cookie: `did=${did}` },
  });
  await device.body?.cancel();
  assertEquals(device.status, 200);
});

Deno.test("a password longer than 72 bytes, or with NUL, never matches at login", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "100" });
  const p72 = "é".repeat(30) + "x".repeat(12); // 72 bytes as UTF-8
  const long = await svc.userClient("viewer", { password: p72 });
  const short = await svc.userClient("viewer", { password: "viewerpass1" });
  const tries: [string, string, number][] = [
    [long.account.username, p72, 200],
    [long.account.username, p72 + "anything", 401],
    [long.account.username, p72 + "x", 401],
    [short.account.username, "viewerpass1", 200],
    [short.account.username, "viewerpass1\u0000viewerpass1", 401],
    [short.account.username, "viewerpass1\u0000", 401],
  ];
  for (const [username, password, status] of tries) {
    const res = await login(api, username, password);
    assertEquals(res.status, status, JSON.stringify(password));
    if (status === 401) assertEquals(res.body, INVALID);
  }
  // The same bcrypt work is done, against a hash: never a match.
  const hasher = createPasswordHasher(10);
  // bcrypt alone would take 9 NULs for 8 (both are the empty password to it).
  assertEquals(
    await hasher.verify("\u0000".repeat(9), await hash("\u0000".repeat(8), 10)),
    false,
  );
  assertEquals(await hasher.verify(p72 + "y", await hash(p72, 10)), false);
  assertEquals(await hasher.verify(p72, await hash(p72, 10)), true);
});

Deno.test("POST and PATCH refuse NUL in a password with 400, after the other checks", async () => {
  const svc = await service();
  const body = (fields: Record<string, string>) => ({
    username: "nul-user",
    name: "Nul",
    email: "nul@example.com",
    password: "pass\u0000word1",
    role: "viewer" as const,
    ...fields,
  });
  const post = async (fields: Record<string, string>) => {
    const res = await svc.admin.POST("/api/users", { body: body(fields) });
    return [res.response.status, res.error] as [number, unknown];
  };
  const nul = { error: "Password must not contain NUL characters" };
  assertEquals(await post({}), [400, nul]);
  assertEquals(await post({ password: "\u0000".repeat(8) }), [400, nul]);
  // Earlier rules come first: length, the username, the 72 bytes.
  assertEquals(await post({ password: "\u0000" }), [400, {
    error: "Password must be at least 8 characters",
  }]);
  assertEquals(await post({ username: "x".repeat(65) }), [400, {
    error: "Username must be at most 64 characters without control characters",
  }]);
  assertEquals(await post({ password: "\u0000" + "y".repeat(72) }), [400, {
    error: "Password must be at most 72 bytes",
  }]);
  const { account } = await svc.userClient("viewer");
  const patch = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "viewer\u0000pass" },
  });
  assertEquals([patch.response.status, patch.error], [400, nul]);
  assertEquals(
    (await svc.sql`select 1 from users where username = 'nul-user'`).length,
    0,
  );
});

Deno.test("a login racing a password reset never yields a session that outlives the reset (many rounds)", async () => {
  await using svc = await startService();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "100000" });
  const { account, password: first } = await svc.userClient("viewer");
  const ROUNDS = 8;
  let raced = 0;
  let password = first;
  for (let round = 0; round < ROUNDS; round++) {
    const old = password;
    password = `reset-password-${round}`;
    // An attacker who knows the old password logs in over and over...
    let resetDone = false;
    const cookies: string[] = [];
    // Four at a time, each starting again as soon as it is answered.
    const attacker = Promise.all(Array.from({ length: 4 }, async () => {
      while (!resetDone) {
        const res = await login(api, account.username, old);
        if (res.status === 200) cookies.push(res.cookie!);
      }
    }));
    // ...while an admin resets it.
    await new Promise((r) => setTimeout(r, 30 + round * 10));
    const reset = await svc.admin.PATCH("/api/users/{id}", {
      params: { path: { id: account.id } },
      body: { password },
    });
    assertEquals(reset.response.status, 200);
    resetDone = true;
    await attacker;
    for (const cookie of cookies) {
      const me = await svc.fetch("/api/auth/me", { headers: { cookie } });
      await me.body?.cancel();
      assertEquals(
        me.status,
        401,
        `round ${round}: a session of the old password outlived the reset`,
      );
    }
    raced += cookies.length;
  }
  assert(raced > 0, "no login with the old password ever succeeded");
  // The new password works, and the caller's own session survives its own reset.
  assertEquals(await statusOf(login(api, account.username, password)), 200);
});

Deno.test("an admin's own session survives their own password reset, bound to the new password", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("admin");
  const own = await client.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "my-own-new-password" },
  });
  assertEquals(own.response.status, 200);
  assertEquals((await client.me()).status, 200);
  // Bound to the new one: when another admin resets it again, it ends too.
  await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "set-by-another-admin" },
  });
  assertEquals((await client.me()).status, 401);
});
