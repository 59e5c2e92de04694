/**
 * A second factor: TOTP enrolment, the login in two steps or one, recovery
 * codes, the wrong-code throttle, removal and an admin's reset, through the
 * typed client wherever a call fits.
 */
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { newUser, sharedService } from "./support/service.ts";
import {
  ageSecondFactor,
  codeAt,
  enrolTotp,
  freshCode,
  records,
  untilStepHasLeft,
  userWithTotp,
} from "./mfa_support.ts";

// bcrypt's work is not this file's subject: its cheapest cost.
const service = sharedService({}, { bcryptCost: 4 });

/** A raw login: status, body and the cookies it set. */
async function rawLogin(
  svc: Awaited<ReturnType<typeof service>>,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: await res.json(),
    cookies: res.headers.getSetCookie(),
    retryAfter: res.headers.get("retry-after"),
  };
}

const pendingOf = (cookies: string[]) =>
  /^mfa=([^;]+)/.exec(cookies.find((c) => c.startsWith("mfa=")) ?? "")?.[1];

/** The second step with a raw `mfa` cookie: status and body. */
async function rawSecondStep(
  svc: Awaited<ReturnType<typeof service>>,
  pending: string | undefined,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await svc.fetch("/api/auth/login/second-factor", {
    method: "POST",
    headers: {
      ...headers,
      ...pending === undefined ? {} : { cookie: `mfa=${pending}` },
    },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: await res.json(),
    cookies: res.headers.getSetCookie(),
    retryAfter: res.headers.get("retry-after"),
  };
}

Deno.test("a TOTP enrolment answers a secret, its otpauth URL and an SVG QR code, and changes nothing until it is confirmed", async () => {
  const svc = await service();
  const { client, account, password } = await svc.userClient("viewer");
  const begun = await client.post("/api/auth/mfa/totp");
  assert(begun.ok);
  assertEquals(begun.status, 201);
  assertMatch(begun.data.secret, /^[A-Z2-7]{32}$/);
  assertMatch(
    begun.data.otpauthUrl,
    new RegExp(
      `^otpauth://totp/.+:${account.username}\\?.*secret=${begun.data.secret}`,
    ),
  );
  assert(begun.data.otpauthUrl.includes("algorithm=SHA1"));
  assert(begun.data.otpauthUrl.includes("digits=6"));
  assert(begun.data.otpauthUrl.includes("period=30"));
  assertMatch(begun.data.qrCodeSvg, /^<svg[^>]*>[\s\S]*<\/svg>$/);

  // Unconfirmed: the password alone still logs in, and nothing is listed.
  const again = svc.client();
  assertEquals((await again.login(account.username, password)).status, 200);
  const listed = await client.get("/api/auth/mfa");
  assert(listed.ok);
  assertEquals(listed.data, { totp: null, passkeys: [], recoveryCodesLeft: 0 });
});

Deno.test("confirming a TOTP with a wrong code answers 400 Invalid code; a right one answers ten recovery codes and lists the factor", async () => {
  const svc = await service();
  const { client, account } = await svc.userClient("viewer");
  const none = await client.post("/api/auth/mfa/totp/confirm", {
    body: { code: "123456" },
  });
  assertEquals([none.status, !none.ok && none.error], [400, "Invalid code"]);
  const begun = await client.post("/api/auth/mfa/totp");
  assert(begun.ok);
  await untilStepHasLeft(5_000);
  for (const code of [codeAt(begun.data.secret, 2), "12345", "abcdef"]) {
    const wrong = await client.post("/api/auth/mfa/totp/confirm", {
      body: { code },
    });
    assertEquals([wrong.status, !wrong.ok && wrong.error], [
      400,
      "Invalid code",
    ]);
  }
  const confirmed = await client.post("/api/auth/mfa/totp/confirm", {
    body: { code: codeAt(begun.data.secret) },
  });
  assert(confirmed.ok);
  const codes = confirmed.data.recoveryCodes;
  assertEquals(codes.length, 10);
  assertEquals(new Set(codes).size, 10);
  for (const code of codes) assertMatch(code, /^[0-9a-z]{5}-[0-9a-z]{5}$/);
  const listed = await client.get("/api/auth/mfa");
  assert(listed.ok);
  assert(listed.data.totp !== null);
  assertMatch(listed.data.totp.enrolledAt, /^\d{4}-\d\d-\d\dT.*Z$/);
  assertEquals(listed.data.recoveryCodesLeft, 10);
  // The database keeps the codes' hashes, never a code.
  const stored = await svc.sql`select code_hash from mfa_recovery_codes
    where user_id = ${account.id}`;
  assertEquals(stored.length, 10);
  const text = JSON.stringify(stored);
  for (const code of codes) assert(!text.includes(code.replace("-", "")));
  assertEquals(
    (await records(svc, "mfa.enrolled", account.id)).map((r) => r.details),
    [{ method: "totp" }],
  );
  // A second enrolment while one is confirmed: 409.
  const twice = await client.post("/api/auth/mfa/totp");
  assertEquals([twice.status, !twice.ok && twice.error], [
    409,
    "Second factor already enrolled",
  ]);
});

Deno.test("a right password of a user with a factor answers 401 Second factor required and the pending cookie mfa, with the decided attributes and no session", async () => {
  const svc = await service();
  const { account, password } = await userWithTotp(svc, "viewer");
  const res = await rawLogin(svc, { username: account.username, password });
  assertEquals(res.status, 401);
  assertEquals(res.body, { error: "Second factor required" });
  assertEquals(res.cookies.length, 1);
  const cookie = res.cookies[0];
  assertMatch(cookie, /^mfa=[A-Za-z0-9_-]{43};/);
  const attributes = cookie.split(";").slice(1).map((a) => a.trim()).sort();
  assertEquals(attributes, [
    "HttpOnly",
    "Max-Age=300",
    "Path=/api/auth",
    "SameSite=Strict",
  ]);
});

Deno.test("a wrong password of a user with a factor answers as any wrong password: nothing says there is a factor", async () => {
  const svc = await service();
  const { account } = await userWithTotp(svc, "viewer");
  const withFactor = await rawLogin(svc, {
    username: account.username,
    password: "not-the-password",
  });
  const without = await rawLogin(svc, {
    username: "nobody-at-all",
    password: "not-the-password",
  });
  const withCode = await rawLogin(svc, {
    username: account.username,
    password: "not-the-password",
    code: "000000",
  });
  for (const res of [withFactor, without, withCode]) {
    assertEquals(res.status, 401);
    assertEquals(res.body, { error: "Invalid username or password" });
    assertEquals(res.cookies, []);
  }
});

Deno.test("the second step with a TOTP code logs in once: the pending cookie cannot be used again", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const client = svc.client();
  const first = await client.login(account.username, password);
  assertEquals([first.status, !first.ok && first.error], [
    401,
    "Second factor required",
  ]);
  assert(!client.hasSession);
  const step = await client.secondFactor({
    code: await freshCode(svc, account.id, secret),
  });
  assert(step.ok, `second step: ${!step.ok && step.error}`);
  assertEquals(step.data.id, account.id);
  assert(client.hasSession);
  assertEquals((await client.me()).status, 200);
  // The same pending cookie again, with another right code: used.
  const raw = await rawLogin(svc, { username: account.username, password });
  const pending = pendingOf(raw.cookies);
  const ok = await rawSecondStep(svc, pending, {
    code: await freshCode(svc, account.id, secret),
  });
  assertEquals(ok.status, 200);
  assert(ok.cookies.some((c) => /^mfa=;.*Max-Age=0/.test(c)));
  const reused = await rawSecondStep(svc, pending, {
    code: await freshCode(svc, account.id, secret),
  });
  assertEquals([reused.status, reused.body], [401, { error: "Unauthorised" }]);
  const methods = (await records(svc, "login.succeeded", account.id))
    .map((r) => r.details);
  assertEquals(methods.at(-1), { methods: ["password", "totp"] });
});

Deno.test("a login in one request with the code logs in; a wrong code answers 401 Invalid code and sets no cookie", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const client = svc.client();
  const wrong = await client.login(account.username, password, "000000");
  assertEquals([wrong.status, !wrong.ok && wrong.error], [401, "Invalid code"]);
  assert(!client.hasSession);
  const right = await client.login(
    account.username,
    password,
    await freshCode(svc, account.id, secret),
  );
  assert(right.ok);
  assertEquals((await client.me()).status, 200);
  const bad = await rawLogin(svc, {
    username: account.username,
    password,
    code: 123456,
  });
  assertEquals([bad.status, bad.body], [400, {
    error: "Invalid request body",
  }]);
});

Deno.test("a user without a factor logs in with the password alone, and a code sent along is ignored", async () => {
  const svc = await service();
  const { account, password } = await svc.userClient("viewer");
  const client = svc.client();
  assertEquals((await client.login(account.username, password)).status, 200);
  assertEquals(
    (await svc.client().login(account.username, password, "123456")).status,
    200,
  );
  assertEquals(
    (await records(svc, "login.succeeded", account.id)).at(-1)?.details,
    { methods: ["password"] },
  );
});

Deno.test("a wrong code leaves the pending cookie usable", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const client = svc.client();
  await client.login(account.username, password);
  const wrong = await client.secondFactor({ code: "000000" });
  assertEquals([wrong.status, !wrong.ok && wrong.error], [401, "Invalid code"]);
  const right = await client.secondFactor({
    code: await freshCode(svc, account.id, secret),
  });
  assertEquals(right.status, 200);
});

Deno.test("codes of the wrong length or alphabet, a replayed code and codes two steps away answer 401 Invalid code; one step either side is accepted", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const client = svc.client();
  await client.login(account.username, password);
  const forget = () => svc.sql`delete from mfa_failures`;
  await untilStepHasLeft(12_000);
  const invalid = async (code: string) => {
    await forget();
    const res = await client.secondFactor({ code });
    assertEquals([res.status, !res.ok && res.error], [401, "Invalid code"]);
  };
  await svc
    .sql`update mfa_totp set last_step = 0 where user_id = ${account.id}`;
  for (
    const code of [
      "12345",
      "1234567",
      "abcdef",
      "１２３４５６",
      "",
      " ",
      "x".repeat(64),
      codeAt(secret, -2),
      codeAt(secret, 2),
    ]
  ) await invalid(code);
  // The previous step's code is accepted once; then it is a replay, and so
  // is every code of a step before the one used last.
  await forget();
  const previous = codeAt(secret, -1);
  assertEquals((await client.secondFactor({ code: previous })).status, 200);
  await client.login(account.username, password);
  await invalid(previous);
  const next = codeAt(secret, 1);
  await forget();
  assertEquals((await client.secondFactor({ code: next })).status, 200);
  await client.login(account.username, password);
  await invalid(next);
  await invalid(codeAt(secret));
  // One-shot logins are held to the same rule.
  await forget();
  const oneShot = await svc.client().login(account.username, password, next);
  assertEquals([oneShot.status, !oneShot.ok && oneShot.error], [
    401,
    "Invalid code",
  ]);
  // A code longer than 64 characters or holding NUL, both a code and a
  // passkey, or no code at all: a bad body.
  for (
    const body of [
      { code: "1".repeat(65) },
      { code: "12345\u0000" },
      { code: "123456", passkey: {} },
      {},
      { code: 1 },
      "x",
    ]
  ) {
    const res = await client.post("/api/auth/login/second-factor", {
      body: body as never,
    });
    assertEquals([res.status, !res.ok && res.error], [
      400,
      "Invalid request body",
    ]);
  }
});

Deno.test("the second step without a pending cookie, or with one expired, outdated by a password change or forged, answers 401 Unauthorised", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const code = () => freshCode(svc, account.id, secret);
  const unauthorised = { error: "Unauthorised" };
  assertEquals(
    (await rawSecondStep(svc, undefined, { code: await code() })).body,
    unauthorised,
  );
  assertEquals(
    (await rawSecondStep(svc, "A".repeat(43), { code: await code() })).status,
    401,
  );
  assertEquals(
    (await rawSecondStep(svc, "not-a-token", { code: await code() })).status,
    401,
  );
  // Expired.
  const expiring = pendingOf(
    (await rawLogin(svc, { username: account.username, password })).cookies,
  );
  await svc
    .sql`update mfa_pending set expires_at = now() - interval '1 second'`;
  const expired = await rawSecondStep(svc, expiring, { code: await code() });
  assertEquals([expired.status, expired.body], [401, unauthorised]);
  // Outdated: an admin reset the password after the first step.
  const outdated = pendingOf(
    (await rawLogin(svc, { username: account.username, password })).cookies,
  );
  const reset = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id: account.id } },
    body: { password: "a-brand-new-password" },
  });
  assert(reset.ok);
  const stale = await rawSecondStep(svc, outdated, { code: await code() });
  assertEquals([stale.status, stale.body], [401, unauthorised]);
  // A bad body after no pending cookie: the 401 comes first.
  assertEquals((await rawSecondStep(svc, undefined, "x")).status, 401);
});

Deno.test("another user's pending cookie does not take this user's code", async () => {
  const svc = await service();
  const alice = await userWithTotp(svc, "viewer");
  const bob = await userWithTotp(svc, "viewer");
  const bobs = pendingOf(
    (await rawLogin(svc, {
      username: bob.account.username,
      password: bob.password,
    })).cookies,
  );
  const crossed = await rawSecondStep(svc, bobs, {
    code: await freshCode(svc, alice.account.id, alice.secret),
  });
  assertEquals([crossed.status, crossed.body], [401, {
    error: "Invalid code",
  }]);
  const crossedRecovery = await rawSecondStep(svc, bobs, {
    code: alice.recoveryCodes[0],
  });
  assertEquals(crossedRecovery.status, 401);
  assertEquals(
    (await svc.sql`select 1 from mfa_recovery_codes
      where user_id = ${alice.account.id}`).length,
    10,
  );
});

Deno.test("each recovery code logs in once, in any case, with or without its dash, and the count left goes down", async () => {
  const svc = await service();
  const { client: own, account, password, recoveryCodes } = await userWithTotp(
    svc,
    "viewer",
  );
  const [first, second, third] = recoveryCodes;
  const client = svc.client();
  await client.login(account.username, password);
  assertEquals((await client.secondFactor({ code: first })).status, 200);
  await client.login(account.username, password);
  const again = await client.secondFactor({ code: first });
  assertEquals([again.status, !again.ok && again.error], [401, "Invalid code"]);
  assertEquals(
    (await client.secondFactor({ code: second.toUpperCase() })).status,
    200,
  );
  assertEquals(
    (await svc.client().login(
      account.username,
      password,
      ` ${third.replace("-", "")} `,
    )).status,
    200,
  );
  const listed = await own.get("/api/auth/mfa");
  assert(listed.ok);
  assertEquals(listed.data.recoveryCodesLeft, 7);
  assertEquals(
    (await records(svc, "login.succeeded", account.id)).at(-1)?.details,
    { methods: ["password", "recovery_code"] },
  );
});

Deno.test("after 5 wrong codes every second-factor attempt answers 429 with Retry-After, the right code and one-shot login included; the password throttle counts none of them", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const client = svc.client();
  await client.login(account.username, password);
  for (let i = 0; i < 5; i++) {
    const wrong = await client.secondFactor({ code: "000000" });
    assertEquals(wrong.status, 401);
  }
  const res = await client.POST("/api/auth/login/second-factor", {
    body: { code: await freshCode(svc, account.id, secret) },
  });
  assertEquals(res.response.status, 429);
  assertEquals(res.error, { error: "Too many login attempts" });
  const retryAfter = Number(res.response.headers.get("retry-after"));
  assert(retryAfter > 0 && retryAfter <= 900, `Retry-After ${retryAfter}`);
  // One-shot logins with the right password and code: 429 as well, more
  // than LOGIN_MAX_FAILURES (10) times, and still the password alone is
  // not throttled: the wrong codes counted nowhere else.
  for (let i = 0; i < 12; i++) {
    const oneShot = await rawLogin(svc, {
      username: account.username,
      password,
      code: await freshCode(svc, account.id, secret),
    });
    assertEquals([oneShot.status, oneShot.body], [429, {
      error: "Too many login attempts",
    }]);
    assert(oneShot.retryAfter !== null);
  }
  const passwordOnly = await rawLogin(svc, {
    username: account.username,
    password,
  });
  assertEquals(passwordOnly.body, { error: "Second factor required" });
  // Five records of the five wrong codes, none after.
  assertEquals(
    (await records(svc, "login.second_factor_failed", account.id)).length,
    5,
  );
  // The window passes: the right code logs in again.
  await svc.sql`update mfa_failures
    set window_started_at = now() - interval '1 hour'`;
  const after = await svc.client().login(
    account.username,
    password,
    await freshCode(svc, account.id, secret),
  );
  assertEquals(after.status, 200);
});

Deno.test("10,000 wrong codes from many addresses answer only 401 and then 429, never unlock, and write at most 5 records", async () => {
  const svc = await service();
  const { account, password, secret } = await userWithTotp(svc, "viewer");
  const proxied = svc.configured({ TRUST_PROXY: "true" });
  const login = await proxied.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: account.username, password }),
  });
  const pending = pendingOf(login.headers.getSetCookie());
  assert(pending);
  const statuses = new Map<number, number>();
  let n = 0;
  const worker = async () => {
    while (n < 10_000) {
      const i = n++;
      const code = String(i % 1_000_000).padStart(6, "0");
      const res = await proxied.fetch("/api/auth/login/second-factor", {
        method: "POST",
        headers: {
          cookie: `mfa=${pending}`,
          "x-forwarded-for": `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${
            i & 255
          }`,
        },
        body: JSON.stringify(
          i % 3 === 0 ? { code } : i % 3 === 1 ? { code: `${code}x` } : {
            passkey: { id: "x", response: {} },
          },
        ),
      });
      await res.body?.cancel();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  assertEquals([...statuses.keys()].sort(), [401, 429]);
  assert((statuses.get(401) ?? 0) <= 5, `401s: ${statuses.get(401)}`);
  assertEquals(
    (await records(svc, "login.second_factor_failed", account.id)).length,
    statuses.get(401),
  );
  // No session but the enrolling one.
  assertEquals(
    (await svc.sql`select 1 from sessions where user_id = ${account.id}`)
      .length,
    1,
  );
  // The right code still fails until the window passes.
  const right = await rawSecondStep(svc, pending, {
    code: await freshCode(svc, account.id, secret),
  });
  assertEquals(right.status, 429);
});

Deno.test("removing the TOTP needs a recent second factor; then the password alone logs in again and the codes are gone", async () => {
  const svc = await service();
  const { client, account, password, secret } = await userWithTotp(
    svc,
    "viewer",
  );
  await ageSecondFactor(svc, account.id);
  const refused = await client.delete("/api/auth/mfa/totp");
  assertEquals([refused.status, !refused.ok && refused.error], [
    403,
    "Recent second factor required",
  ]);
  const wrong = await client.stepUp({ code: "000000" });
  assertEquals([wrong.status, !wrong.ok && wrong.error], [401, "Invalid code"]);
  const stepped = await client.stepUp({
    code: await freshCode(svc, account.id, secret),
  });
  assert(stepped.ok);
  assertEquals(stepped.data, { ok: true });
  const removed = await client.delete("/api/auth/mfa/totp");
  assertEquals(removed.status, 200);
  const gone = await client.delete("/api/auth/mfa/totp");
  assertEquals([gone.status, !gone.ok && gone.error], [
    404,
    "Second factor not found",
  ]);
  assertEquals(
    (await svc.client().login(account.username, password)).status,
    200,
  );
  const listed = await client.get("/api/auth/mfa");
  assert(listed.ok);
  assertEquals(listed.data, { totp: null, passkeys: [], recoveryCodesLeft: 0 });
  assertEquals(
    (await records(svc, "mfa.removed", account.id)).map((r) => r.details),
    [{ method: "totp" }],
  );
  const noFactor = await client.stepUp({ code: "000000" });
  assertEquals([noFactor.status, !noFactor.ok && noFactor.error], [
    400,
    "No second factor enrolled",
  ]);
});

Deno.test("new recovery codes need a recent second factor and replace the old ones", async () => {
  const svc = await service();
  const { client, account, password, recoveryCodes } = await userWithTotp(
    svc,
    "viewer",
  );
  const fresh = await client.post("/api/auth/mfa/recovery-codes");
  assert(fresh.ok);
  assertEquals(fresh.data.recoveryCodes.length, 10);
  const old = await svc.client().login(
    account.username,
    password,
    recoveryCodes[0],
  );
  assertEquals(old.status, 401);
  const renewed = await svc.client().login(
    account.username,
    password,
    fresh.data.recoveryCodes[0],
  );
  assertEquals(renewed.status, 200);
  assertEquals(
    (await records(svc, "mfa.recovery_codes", account.id)).length,
    1,
  );
  await ageSecondFactor(svc, account.id);
  const refused = await client.post("/api/auth/mfa/recovery-codes");
  assertEquals([refused.status, !refused.ok && refused.error], [
    403,
    "Recent second factor required",
  ]);
  const none = await (await svc.userClient("viewer")).client.post(
    "/api/auth/mfa/recovery-codes",
  );
  assertEquals([none.status, !none.ok && none.error], [
    400,
    "No second factor enrolled",
  ]);
});

Deno.test("enrolment takes a session: no session answers 401, an API key 403", async () => {
  const svc = await service();
  const anonymous = await svc.client().post("/api/auth/mfa/totp");
  assertEquals([anonymous.status, !anonymous.ok && anonymous.error], [
    401,
    "Unauthorised",
  ]);
  const key = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
    body: { name: "robot" },
  });
  assert(key.ok);
  for (
    const [method, path] of [
      ["POST", "/api/auth/mfa/totp"],
      ["GET", "/api/auth/mfa"],
      ["POST", "/api/auth/step-up"],
      ["POST", "/api/auth/mfa/passkeys/options"],
    ]
  ) {
    const res = await svc.fetch(path, {
      method,
      headers: { authorization: `Bearer ${key.data.key}` },
      ...method === "POST" ? { body: "{}" } : {},
    });
    assertEquals([res.status, await res.json()], [403, {
      error: "Forbidden",
    }]);
  }
});

Deno.test("an admin resets another user's factors: their sessions end, the password alone logs in, and the detail shows no factor", async () => {
  const svc = await service();
  const alice = await userWithTotp(svc, "viewer");
  const detail = await svc.admin.get("/api/users/{id}", {
    params: { path: { id: alice.account.id } },
  });
  assert(detail.ok);
  assert(detail.data.mfa.totp !== null);
  assertEquals(detail.data.mfa.passkeys, []);
  assertEquals(detail.data.mfa.recoveryCodesLeft, 10);
  const unknown = await svc.admin.delete("/api/users/{id}/mfa", {
    params: { path: { id: 999_999 } },
  });
  assertEquals([unknown.status, !unknown.ok && unknown.error], [
    404,
    "User not found",
  ]);
  const reset = await svc.admin.delete("/api/users/{id}/mfa", {
    params: { path: { id: alice.account.id } },
  });
  assert(reset.ok);
  assertEquals(reset.data, { ok: true });
  assertEquals((await alice.client.me()).status, 401);
  assertEquals(
    (await svc.client().login(alice.account.username, alice.password)).status,
    200,
  );
  const after = await svc.admin.get("/api/users/{id}", {
    params: { path: { id: alice.account.id } },
  });
  assert(after.ok);
  assertEquals(after.data.mfa, {
    totp: null,
    passkeys: [],
    recoveryCodesLeft: 0,
  });
  const recorded = await records(svc, "mfa.reset", alice.account.id);
  assertEquals(recorded.map((r) => r.actor_id), [svc.adminAccount.id]);
  // A viewer may not.
  const viewer = await svc.userClient("viewer");
  const forbidden = await viewer.client.delete("/api/users/{id}/mfa", {
    params: { path: { id: alice.account.id } },
  });
  assertEquals(forbidden.status, 403);
});

Deno.test("step-up: an admin with a factor whose second factor is old must renew it to mint a key, delete a user, make an admin or reset factors; API keys and admins without a factor need not", async () => {
  const svc = await service();
  const admin = await userWithTotp(svc, "admin");
  const target = await svc.userClient("viewer");
  await ageSecondFactor(svc, admin.account.id);
  const recent = "Recent second factor required";
  const refused = async (answer: Promise<{ status: number; ok: boolean }>) => {
    const res = await answer as { status: number; ok: false; error: string };
    assertEquals([res.status, res.error], [403, recent]);
  };
  const c = admin.client;
  const id = target.account.id;
  await refused(c.post("/api/users/{id}/keys", {
    params: { path: { id } },
    body: { name: "k" },
  }));
  await refused(c.delete("/api/users/{id}", { params: { path: { id } } }));
  await refused(c.patch("/api/users/{id}", {
    params: { path: { id } },
    body: { role: "admin" },
  }));
  await refused(c.post("/api/users", {
    body: { ...newUser("newadmin"), role: "admin" },
  }));
  await refused(c.delete("/api/users/{id}/mfa", { params: { path: { id } } }));
  // Before the endpoint's own checks: an id that cannot exist, too.
  await refused(c.delete("/api/users/{id}", {
    params: { path: { id: "abc" as unknown as number } },
  }));
  // Not dangerous: a role change to viewer, a viewer created, a read.
  assertEquals(
    (await c.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "viewer" },
    })).status,
    200,
  );
  assertEquals(
    (await c.post("/api/users", { body: newUser("plainviewer") })).status,
    201,
  );
  assertEquals((await c.get("/api/users")).status, 200);
  // Renewed: every one of them goes through.
  const stepped = await c.stepUp({
    code: await freshCode(svc, admin.account.id, admin.secret),
  });
  assert(stepped.ok);
  assertEquals(
    (await c.post("/api/users/{id}/keys", {
      params: { path: { id } },
      body: { name: "k" },
    })).status,
    201,
  );
  assertEquals(
    (await c.patch("/api/users/{id}", {
      params: { path: { id } },
      body: { role: "admin" },
    })).status,
    200,
  );
  assertEquals(
    (await c.delete("/api/users/{id}", { params: { path: { id } } })).status,
    200,
  );
  // An API key of the admin is exempt, however old the session's factor.
  await ageSecondFactor(svc, admin.account.id);
  const minted = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: admin.account.id } },
    body: { name: "robot" },
  });
  assert(minted.ok);
  const other = await svc.userClient("viewer");
  const res = await svc.fetch(`/api/users/${other.account.id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${minted.data.key}` },
  });
  assertEquals(res.status, 200);
  // The first admin has no factor: no step-up.
  assertEquals(
    (await svc.admin.post("/api/users", {
      body: { ...newUser("anotheradmin"), role: "admin" },
    })).status,
    201,
  );
});

Deno.test("MFA_REQUIRED_FOR_ADMINS: an admin without a factor logs in but gets 403 Second factor enrollment required everywhere except me, logout and enrolment, until the enrolment is confirmed", async () => {
  const svc = await service();
  const strict = svc.configured({ MFA_REQUIRED_FOR_ADMINS: "true" });
  const created = await svc.admin.post("/api/users", {
    body: { ...newUser("policyadmin"), role: "admin" },
  });
  assert(created.ok);
  const client = strict.client();
  const login = await client.login("policyadmin", "policyadmin-password");
  assertEquals(login.status, 200);
  const required = "Second factor enrollment required";
  const list = await client.get("/api/users");
  assertEquals([list.status, !list.ok && list.error], [403, required]);
  // After 401, before the endpoint's own checks (a 404 of a bad id).
  const bad = await client.delete("/api/users/{id}", {
    params: { path: { id: "abc" as unknown as number } },
  });
  assertEquals([bad.status, !bad.ok && bad.error], [403, required]);
  const anonymous = await strict.client().get("/api/users");
  assertEquals(anonymous.status, 401);
  assertEquals((await client.me()).status, 200);
  assertEquals((await client.get("/api/auth/mfa")).status, 200);
  // A viewer is not held, and still gets its 403 Forbidden.
  const viewer = strict.client();
  await svc.admin.post("/api/users", { body: newUser("policyviewer") });
  await viewer.login("policyviewer", "policyviewer-password");
  const viewed = await viewer.get("/api/users");
  assertEquals([viewed.status, !viewed.ok && viewed.error], [403, "Forbidden"]);
  // The enrolment, through the held session, lifts it for that session.
  await enrolTotp(client);
  assertEquals((await client.get("/api/users")).status, 200);
  // The first admin's own session (no factor) is held; its key is not.
  const firstAdmin = strict.client();
  await firstAdmin.login("admin", "admin-pass-1234");
  assertEquals((await firstAdmin.get("/api/users")).status, 403);
  const key = await svc.admin.post("/api/users/{id}/keys", {
    params: { path: { id: svc.adminAccount.id } },
    body: { name: "robot" },
  });
  assert(key.ok);
  const byKey = await strict.fetch("/api/users", {
    headers: { authorization: `Bearer ${key.data.key}` },
  });
  assertEquals(byKey.status, 200);
  await byKey.body?.cancel();
  assertEquals((await client.logout()).status, 200);
});

Deno.test("without the policy an admin without a factor is not held", async () => {
  const svc = await service();
  const created = await svc.admin.post("/api/users", {
    body: { ...newUser("freeadmin"), role: "admin" },
  });
  assert(created.ok);
  const client = svc.client();
  await client.login("freeadmin", "freeadmin-password");
  assertEquals((await client.get("/api/users")).status, 200);
});

Deno.test("the list of users keeps its six fields; the detail gains mfa", async () => {
  const svc = await service();
  await userWithTotp(svc, "viewer");
  const list = await svc.admin.get("/api/users");
  assert(list.ok);
  for (const user of list.data) {
    assertEquals(Object.keys(user).sort(), [
      "createdAt",
      "email",
      "id",
      "name",
      "role",
      "username",
    ]);
  }
});

Deno.test("asking for passkey options again and again keeps a handful of challenges, not one per request", async () => {
  const svc = await service();
  const { client, account, password } = await userWithTotp(svc, "viewer");
  for (let i = 0; i < 20; i++) {
    assertEquals((await client.post("/api/auth/step-up/options")).status, 200);
  }
  const pending = svc.client();
  await pending.login(account.username, password);
  for (let i = 0; i < 20; i++) {
    assertEquals((await pending.secondFactorOptions()).status, 200);
  }
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from mfa_challenges
    where user_id = ${account.id}`;
  assertEquals(n, 10, "five per purpose");
});

Deno.test("the detail's ETag changes with what its mfa shows: new recovery codes, a code used at a step-up", async () => {
  const svc = await service();
  const { client, account } = await userWithTotp(svc, "viewer");
  const tag = async () => {
    const res = await svc.adminFetch(`/api/users/${account.id}`);
    await res.body?.cancel();
    return res.headers.get("etag");
  };
  const before = await tag();
  assert(before);
  assertEquals((await client.post("/api/auth/mfa/recovery-codes")).status, 200);
  const renewed = await tag();
  assert(renewed !== before, "new codes: a new tag");
  const fresh = await client.post("/api/auth/mfa/recovery-codes");
  assert(fresh.ok);
  const codesTag = await tag();
  await ageSecondFactor(svc, account.id);
  assertEquals(
    (await client.stepUp({ code: fresh.data.recoveryCodes[0] })).status,
    200,
  );
  assert((await tag()) !== codesTag, "a code used: a new tag");
});

Deno.test("step-up: creating a provisioning connection and exporting password hashes need a recent second factor; an export without hashes does not (hashes after a step-up: export_test)", async () => {
  const svc = await service();
  const admin = await userWithTotp(svc, "admin");
  await ageSecondFactor(svc, admin.account.id);
  const recent = "Recent second factor required";
  const c = admin.client;
  const connection = await c.post("/api/scim/connections", {
    body: { name: "Okta" },
  });
  assert(!connection.ok);
  assertEquals([connection.status, connection.error], [403, recent]);
  const exportUsers = (query: { include?: "passwordHash" }) =>
    c.GET("/api/users/export", { params: { query }, parseAs: "text" });
  const hashes = await exportUsers({ include: "passwordHash" });
  assertEquals([hashes.response.status, hashes.error as unknown], [403, {
    error: recent,
  }]);
  assertEquals((await exportUsers({})).response.status, 200);
  const stepped = await c.stepUp({
    code: await freshCode(svc, admin.account.id, admin.secret),
  });
  assert(stepped.ok);
  assertEquals(
    (await c.post("/api/scim/connections", { body: { name: "Okta" } }))
      .status,
    201,
  );
});
