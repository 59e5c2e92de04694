import { createApp } from "../src/app.ts";
import {
  createPasswordHasher,
  type PasswordHasher,
} from "../src/auth/passwords.ts";
import { createStore } from "../src/db/store.ts";
import { createLogger } from "../src/log.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { ADMIN, type ConfiguredApp, sharedService } from "./support/service.ts";

// A burst of 30 logins on one counter row on a busy machine can outlast the
// default statement timeout; deadlines are faults_test's subject.
const service = sharedService({ REQUEST_TIMEOUT_MS: "60000" });

/** The shared service's database, behind an app with these throttle settings. */
const throttled = async (env: Record<string, string>) =>
  (await service()).configured(env);

const TOO_MANY = { error: "Too many login attempts" };
const INVALID = { error: "Invalid username or password" };

const login = (
  svc: Pick<ConfiguredApp, "fetch">,
  username: string,
  password: string,
) =>
  svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
  });

async function answer(res: Response) {
  return {
    status: res.status,
    body: await res.json(),
    retryAfter: res.headers.get("retry-after"),
  };
}

Deno.test("after LOGIN_MAX_FAILURES failures even the right password answers 429 with Retry-After", async () => {
  const svc = await throttled({ LOGIN_MAX_FAILURES: "3" });
  const { sql } = await service();
  const sessionsBefore = (await sql`select 1 from sessions`).length;
  for (let i = 0; i < 3; i++) {
    const res = await answer(await login(svc, "admin", `wrong-${i}-pass`));
    assertEquals(res, { status: 401, body: INVALID, retryAfter: null });
  }
  const blocked = await answer(await login(svc, "admin", ADMIN.password));
  assertEquals(blocked.status, 429);
  assertEquals(blocked.body, TOO_MANY);
  const seconds = Number(blocked.retryAfter);
  assert(
    Number.isInteger(seconds) && seconds >= 1 && seconds <= 900,
    `Retry-After ${blocked.retryAfter}`,
  );
  // No session was made by the blocked attempt.
  assertEquals((await sql`select 1 from sessions`).length, sessionsBefore);
});

Deno.test("the throttle counts a username in any case and with surrounding whitespace as one", async () => {
  const svc = await throttled({ LOGIN_MAX_FAILURES: "3" });
  for (const name of ["admin", "ADMIN", " Admin "]) {
    assertEquals((await login(svc, name, "wrong-password")).status, 401);
  }
  assertEquals((await login(svc, "aDmIn", ADMIN.password)).status, 429);
});

Deno.test("unknown usernames are throttled exactly like known ones", async () => {
  const svc = await throttled({ LOGIN_MAX_FAILURES: "3" });
  const seen = [];
  for (const name of ["admin", "nobody-here"]) {
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await login(svc, name, "wrong-password")).status);
    }
    const last = await answer(await login(svc, name, "wrong-password"));
    seen.push({ statuses, status: last.status, body: last.body });
    assert(Number(last.retryAfter) >= 1, String(last.retryAfter));
  }
  assertEquals(seen[0], {
    statuses: [401, 401, 401, 429],
    status: 429,
    body: TOO_MANY,
  });
  assertEquals(seen[1], seen[0]);
  // Other usernames are unaffected.
  assertEquals(
    (await login(svc, "someone-else", "wrong-password")).status,
    401,
  );
});

Deno.test("parallel wrong guesses never get more than LOGIN_MAX_FAILURES password checks", async () => {
  const max = 5;
  const svc = await throttled({ LOGIN_MAX_FAILURES: String(max) });
  for (const name of ["admin", "ghost"]) {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => login(svc, name, `guess-${i}-xx`)),
    );
    const statuses = await Promise.all(answers.map(async (res) => {
      await res.body?.cancel();
      return res.status;
    }));
    assertEquals(statuses.filter((s) => s === 401).length, max, name);
    assertEquals(statuses.filter((s) => s === 429).length, 30 - max, name);
  }
  // The right password does not slip through a burst either.
  const burst = await Promise.all(
    Array.from({ length: 10 }, () => login(svc, "admin", ADMIN.password)),
  );
  for (const res of burst) {
    assertEquals(await answer(res).then((a) => a.status), 429);
  }
});

Deno.test("Retry-After counts down to the end of the fixed window, which starts at the first failure", async () => {
  const { sql } = await service();
  const svc = await throttled({
    LOGIN_MAX_FAILURES: "2",
    LOGIN_WINDOW_SECONDS: "600",
  });
  await login(svc, "admin", "wrong-password").then((r) => r.body?.cancel());
  await login(svc, "admin", "wrong-password").then((r) => r.body?.cancel());
  const fresh = Number(
    (await answer(await login(svc, "admin", "x"))).retryAfter,
  );
  assert(fresh > 590 && fresh <= 600, `fresh window: ${fresh}`);

  // 400 of the 600 seconds have passed: about 200 remain, and more attempts do not extend it.
  await sql`
    update login_failures set window_started_at = window_started_at - interval '400 seconds'`;
  const later = Number(
    (await answer(await login(svc, "admin", "x"))).retryAfter,
  );
  assert(later > 190 && later <= 200, `later: ${later}`);

  // The window is over: the right password works again.
  await sql`
    update login_failures set window_started_at = window_started_at - interval '201 seconds'`;
  assertEquals((await login(svc, "admin", ADMIN.password)).status, 200);
});

Deno.test("a successful login clears the failure count", async () => {
  const { sql } = await service();
  const svc = await throttled({ LOGIN_MAX_FAILURES: "3" });
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 2; i++) {
      assertEquals((await login(svc, "admin", "wrong-password")).status, 401);
    }
    assertEquals((await login(svc, "admin", ADMIN.password)).status, 200);
  }
  assertEquals((await sql`select 1 from login_failures`).length, 0);
});

Deno.test("the throttle lives in the database, so every instance on it sees the same count", async () => {
  const { sql } = await service();
  const svc = await throttled({ LOGIN_MAX_FAILURES: "4" });
  // A second instance: its own app, nothing shared with the first but the database.
  const otherStore = createStore(sql);
  await using _sealed = { [Symbol.asyncDispose]: otherStore.stop };
  const other = createApp({
    store: otherStore,
    config: svc.config,
    log: createLogger("silent"),
  });
  const body = JSON.stringify({ username: "admin", password: "wrong-pass" });
  // The same client address as the requests that reach the first instance.
  const sameClient = { remoteAddr: { hostname: "127.0.0.1" } };
  for (let i = 0; i < 2; i++) {
    assertEquals((await login(svc, "admin", "wrong-pass")).status, 401);
    const res = await other.request("/api/auth/login", {
      method: "POST",
      body,
    }, sameClient);
    assertEquals(res.status, 401);
  }
  const blocked = await other.request("/api/auth/login", {
    method: "POST",
    body: JSON.stringify(ADMIN),
  }, sameClient);
  assertEquals(blocked.status, 429);
  assert(Number(blocked.headers.get("retry-after")) >= 1);
  assertEquals((await login(svc, "admin", ADMIN.password)).status, 429);
});

/** A hasher that records which stored hash each verification ran against. */
function spyHasher(inner: PasswordHasher) {
  const verified: (string | undefined)[] = [];
  const hasher: PasswordHasher = {
    hash: (p) => inner.hash(p),
    verify(password, stored) {
      verified.push(stored);
      return inner.verify(password, stored);
    },
  };
  return { hasher, verified };
}

Deno.test("an unknown username still costs one bcrypt verification, against a real dummy hash, at the configured cost", async () => {
  // The dummy path compares against a bcrypt hash of the configured cost:
  // as slow as a real check. At cost 12 a check is four times one at 10, so
  // a dummy stuck at one cost fails the comparison at the other.
  for (const cost of [10, 12]) {
    const real = createPasswordHasher(cost);
    const stored = await real.hash("the-right-password");
    const durations = { dummy: [] as number[], real: [] as number[] };
    for (let i = 0; i < 3; i++) {
      let t = performance.now();
      assertEquals(await real.verify("a-wrong-password", undefined), false);
      durations.dummy.push(performance.now() - t);
      t = performance.now();
      assertEquals(await real.verify("a-wrong-password", stored), false);
      durations.real.push(performance.now() - t);
    }
    // Even the right password "matches" nothing without a user.
    assertEquals(await real.verify("the-right-password", undefined), false);
    assertComparable(durations.dummy, durations.real);
  }

  // And the login handler does call it for an unknown user.
  const svc = await service();
  const spy = spyHasher(createPasswordHasher(10));
  const app = createApp({
    store: svc.store,
    config: svc.config,
    log: createLogger("silent"),
    passwords: spy.hasher,
  });
  const res = await app.request("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: "nobody", password: "some-password" }),
  });
  assertEquals(res.status, 401);
  assertEquals(spy.verified, [undefined]);
});

Deno.test("unknown-user and wrong-password logins take about the same time, measured side by side", async () => {
  const svc = await throttled({ LOGIN_MAX_FAILURES: "1000" });
  const durations = { unknown: [] as number[], wrong: [] as number[] };
  for (let i = 0; i < 8; i++) {
    for (const [kind, name] of [["unknown", `ghost${i}`], ["wrong", "admin"]]) {
      const t = performance.now();
      const res = await login(svc, name, "not-the-password");
      assertEquals(await res.json(), INVALID);
      durations[kind as keyof typeof durations].push(performance.now() - t);
    }
  }
  assertComparable(durations.unknown, durations.wrong);
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/**
 * Not a speed limit: both sides ran interleaved on the same machine, and an
 * early return for unknown users would be an order of magnitude faster.
 */
function assertComparable(a: number[], b: number[]) {
  const ratio = median(a) / median(b);
  assert(
    ratio > 0.4 && ratio < 2.5,
    `medians ${median(a).toFixed(1)} ms vs ${median(b).toFixed(1)} ms`,
  );
}
