/**
 * Signing in with an identity provider (docs/sso.md) against a real
 * OpenID Connect provider started locally (tests/sso_support.ts): the
 * account each sign-in lands on, and every bad input refused with its
 * message, a record, and no session.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { loadConfig } from "../src/config.ts";
import { freePort } from "./support/process.ts";
import { sharedService, type TestService } from "./support/service.ts";
import { ageSecondFactor, userWithTotp } from "./mfa_support.ts";
import { type Idp, providerBody, signIn, startIdp } from "./sso_support.ts";

const PUBLIC_URL = "http://users.test";
const service = sharedService({ PUBLIC_URL }, { bcryptCost: 4 });
let idpStarted: Idp | undefined;

async function fresh() {
  const svc = await service();
  idpStarted ??= await startIdp(PUBLIC_URL);
  idpStarted.reset();
  return { svc, idp: idpStarted };
}

Deno.test.afterAll(async () => {
  await idpStarted?.[Symbol.asyncDispose]();
});

/** A provider made through the API; its id. */
async function provider(
  svc: TestService,
  idp: Idp,
  extra: Record<string, unknown> = {},
) {
  const res = await svc.adminFetch("/api/sso/providers", {
    method: "POST",
    body: JSON.stringify(providerBody(idp, extra)),
  });
  const body = await res.json();
  assertEquals(res.status, 201, JSON.stringify(body));
  return body as { id: number; redirectUri: string };
}

/** The records of `action` since `since`, oldest first. */
async function records(svc: TestService, action: string) {
  const { data } = await svc.admin.GET("/api/audit", {
    params: { query: { action: action as "user.created", limit: 50 } },
  });
  return (data ?? []).toReversed();
}

Deno.test("a person whose verified e-mail is an account's signs in to it: a session, a link, the records", async () => {
  const { svc, idp } = await fresh();
  const alice = await svc.userClient("viewer", {
    username: "alice",
    email: "alice@example.com",
  });
  const p = await provider(svc, idp);
  assertEquals(p.redirectUri, `${PUBLIC_URL}/api/sso/${p.id}/callback`);
  idp.accounts.set("alice-sub", {
    email: "Alice@Example.com",
    email_verified: true,
    preferred_username: "alice",
  });
  const landed = await signIn(svc, p.id, "alice-sub", {
    returnTo: "/admin#/users",
  });
  assertEquals([landed.status, landed.location, landed.error], [
    302,
    "/admin#/users",
    null,
  ]);
  assert(landed.sid);
  const me = await svc.fetch("/api/auth/me", {
    headers: { cookie: `sid=${landed.sid}` },
  });
  assertEquals((await me.json()).id, alice.account.id);
  const [linked] = await records(svc, "sso.linked");
  assertEquals(linked.target, { id: alice.account.id, username: "alice" });
  assertEquals(linked.details, {
    provider: { id: p.id, name: "Test IdP" },
    by: "email",
  });
  const [succeeded] = (await records(svc, "login.succeeded")).slice(-1);
  assertEquals(succeeded.details, {
    methods: ["oidc"],
    provider: { id: p.id, name: "Test IdP" },
  });
});

/** The newest record of `action`. */
async function newest(svc: TestService, action: string) {
  return (await records(svc, action)).at(-1);
}

/** A sign-in that ended on the sign-in page with `message`, recorded as `reason`, without a session. */
async function assertRefused(
  svc: TestService,
  landed: { status: number; sid?: string; error?: string | null },
  message: string,
  reason: string,
  providerId: number,
) {
  assertEquals([landed.status, landed.error, landed.sid], [
    302,
    message,
    undefined,
  ]);
  const failed = await newest(svc, "login.failed");
  assertEquals(failed?.details, {
    reason,
    provider: { id: providerId, name: "Test IdP" },
  });
}

const verified = (name: string, more: Record<string, unknown> = {}) => ({
  email: `${name}@example.com`,
  email_verified: true,
  preferred_username: name,
  name: `${name[0].toUpperCase()}${name.slice(1)}`,
  ...more,
});

Deno.test("the SCIM connection's user whose externalId is the subject is the account; afterwards the subject alone finds it", async () => {
  const { svc, idp } = await fresh();
  const { data: conn } = await svc.admin.POST("/api/scim/connections", {
    body: { name: "Okta", adminGroups: [] },
  });
  const scim = await svc.fetch("/scim/v2/Users", {
    method: "POST",
    headers: {
      authorization: `Bearer ${conn!.token}`,
      "content-type": "application/scim+json",
    },
    body: JSON.stringify({
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
      userName: "frank",
      externalId: "00u-frank",
      emails: [{ value: "frank@corp.example", primary: true }],
      name: { formatted: "Frank" },
    }),
  });
  assertEquals(scim.status, 201, await scim.text());
  const p = await provider(svc, idp, {
    scimConnectionId: conn!.id,
    link: "externalId",
  });
  // The e-mail the provider sends is another one: the subject decides.
  idp.accounts.set("00u-frank", verified("someone-else"));
  const first = await signIn(svc, p.id, "00u-frank");
  assertEquals([first.status, first.location, first.error], [
    302,
    "/admin",
    null,
  ]);
  const me = await svc.fetch("/api/auth/me", {
    headers: { cookie: `sid=${first.sid}` },
  });
  assertEquals((await me.json()).username, "frank");
  assertEquals((await newest(svc, "sso.linked"))?.details.by, "externalId");
  const linkedCount = (await records(svc, "sso.linked")).length;
  const again = await signIn(svc, p.id, "00u-frank");
  assert(again.sid);
  assertEquals((await records(svc, "sso.linked")).length, linkedCount);
});

Deno.test("a subject that finds no account gets a new viewer without a password when the provider creates users", async () => {
  const { svc, idp } = await fresh();
  const p = await provider(svc, idp, { createUsers: true });
  idp.accounts.set("grace-sub", verified("grace"));
  const landed = await signIn(svc, p.id, "grace-sub");
  assert(landed.sid, JSON.stringify(landed));
  const me = await (await svc.fetch("/api/auth/me", {
    headers: { cookie: `sid=${landed.sid}` },
  })).json();
  assertEquals([me.username, me.email, me.name, me.role], [
    "grace",
    "grace@example.com",
    "Grace",
    "viewer",
  ]);
  const created = await newest(svc, "user.created");
  assertEquals([created?.actor, created?.target?.username], [null, "grace"]);
  assertEquals((await newest(svc, "sso.linked"))?.details.by, "created");
  // No password lets anyone in.
  const login = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: "grace", password: "!" }),
  });
  assertEquals(login.status, 401);
});

Deno.test("no account for the identity: an unverified e-mail does not link, link none does not look, a taken username is not created", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", {
    username: "heidi",
    email: "heidi@example.com",
  });
  const byEmail = await provider(svc, idp);
  idp.accounts.set("heidi-sub", verified("heidi", { email_verified: false }));
  await assertRefused(
    svc,
    await signIn(svc, byEmail.id, "heidi-sub"),
    "No account for this identity",
    "no_account",
    byEmail.id,
  );
  const none = await provider(svc, idp, { link: "none" });
  idp.accounts.set("heidi-2", verified("heidi"));
  await assertRefused(
    svc,
    await signIn(svc, none.id, "heidi-2"),
    "No account for this identity",
    "no_account",
    none.id,
  );
  const creating = await provider(svc, idp, {
    link: "none",
    createUsers: true,
  });
  await assertRefused(
    svc,
    await signIn(svc, creating.id, "heidi-2"),
    "No account for this identity",
    "no_account",
    creating.id,
  );
  assertEquals(
    (await svc.sql`select count(*)::int as n from sso_links`)[0].n,
    0,
  );
});

Deno.test("a disabled account is refused: Account disabled, login.refused, no session", async () => {
  const { svc, idp } = await fresh();
  const ivan = await svc.userClient("viewer", {
    username: "ivan",
    email: "ivan@example.com",
  });
  const disabled = await svc.adminFetch(
    `/api/users/${ivan.account.id}/disable`,
    { method: "POST", body: "{}" },
  );
  assertEquals(disabled.status, 200, await disabled.text());
  const p = await provider(svc, idp);
  idp.accounts.set("ivan-sub", verified("ivan"));
  const landed = await signIn(svc, p.id, "ivan-sub");
  assertEquals([landed.status, landed.error, landed.sid], [
    302,
    "Account disabled",
    undefined,
  ]);
  assertEquals((await newest(svc, "login.refused"))?.details, {
    reason: "disabled",
    provider: { id: p.id, name: "Test IdP" },
  });
});

Deno.test("passwordLogin false: the provider's users cannot sign in with a password, others can", async () => {
  const { svc, idp } = await fresh();
  const judy = await svc.userClient("viewer", {
    username: "judy",
    email: "judy@example.com",
  });
  const p = await provider(svc, idp, { passwordLogin: false });
  // Before the first sign-in links her, her password works.
  assertEquals((await svc.client().login("judy", judy.password)).status, 200);
  idp.accounts.set("judy-sub", verified("judy"));
  assert((await signIn(svc, p.id, "judy-sub")).sid);
  const refused = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: "judy", password: judy.password }),
  });
  assertEquals([refused.status, await refused.json()], [401, {
    error: "Use your identity provider to sign in",
  }]);
  assertEquals((await newest(svc, "login.refused"))?.details, {
    reason: "identity_provider_only",
  });
  // A wrong password tells nothing more than to anyone.
  const wrong = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username: "judy", password: "not-her-password" }),
  });
  assertEquals([wrong.status, await wrong.json()], [401, {
    error: "Invalid username or password",
  }]);
  // The setting back on lets her password in again.
  const patched = await svc.adminFetch(`/api/sso/providers/${p.id}`, {
    method: "PATCH",
    body: JSON.stringify({ passwordLogin: true }),
  });
  assertEquals(patched.status, 200);
  assertEquals((await svc.client().login("judy", judy.password)).status, 200);
});

Deno.test("a wrong, missing, replayed or expired state: Sign-in expired, please try again", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", { username: "ken", email: "ken@example.com" });
  const p = await provider(svc, idp);
  idp.accounts.set("ken-sub", verified("ken"));
  const landed = await signIn(svc, p.id, "ken-sub");
  assert(landed.sid);
  const replay = await svc.fetch(landed.callback, { redirect: "manual" });
  await replay.body?.cancel();
  const expired = "Sign-in expired, please try again";
  await assertRefused(svc, land(replay), expired, "state", p.id);
  for (
    const query of ["?code=x&state=made-up", "?code=x", "?state=a&state=b"]
  ) {
    const res = await svc.fetch(`/api/sso/${p.id}/callback${query}`, {
      redirect: "manual",
    });
    await res.body?.cancel();
    await assertRefused(svc, land(res), expired, "state", p.id);
  }
  // A sign-in that took over its 10 minutes.
  const start = await svc.fetch(`/api/sso/${p.id}/start`, {
    redirect: "manual",
  });
  const state = new URL(start.headers.get("location")!).searchParams.get(
    "state",
  );
  await svc
    .sql`update sso_pending set expires_at = now() - interval '1 second'`;
  const late = await svc.fetch(
    `/api/sso/${p.id}/callback?code=x&state=${state}`,
    { redirect: "manual" },
  );
  await late.body?.cancel();
  await assertRefused(svc, land(late), expired, "state", p.id);
});

Deno.test("a sign-in begun on one instance ends on another", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", { username: "uma", email: "uma@example.com" });
  const p = await provider(svc, idp);
  idp.accounts.set("uma-sub", verified("uma"));
  const other = svc.configured({});
  const landed = await signIn(svc, p.id, "uma-sub", { finishOn: other });
  assertEquals([landed.status, landed.error], [302, null]);
  const me = await svc.fetch("/api/auth/me", {
    headers: { cookie: `sid=${landed.sid}` },
  });
  assertEquals((await me.json()).username, "uma");
});

Deno.test("housekeeping deletes the sign-ins that never came back", async () => {
  const { svc, idp } = await fresh();
  const p = await provider(svc, idp);
  const start = await svc.fetch(`/api/sso/${p.id}/start`, {
    redirect: "manual",
  });
  assertEquals(start.status, 302);
  const count = async () =>
    (await svc.sql`select count(*)::int as n from sso_pending
      where provider_id = ${p.id}`)[0].n;
  assertEquals(await count(), 1);
  await svc
    .sql`update sso_pending set expires_at = now() - interval '1 second'`;
  while (await count() > 0) await new Promise((r) => setTimeout(r, 50));
});

Deno.test("the person cancels at the provider: Sign-in was cancelled", async () => {
  const { svc, idp } = await fresh();
  const p = await provider(svc, idp);
  idp.accounts.set("leo-sub", verified("leo"));
  await assertRefused(
    svc,
    await signIn(svc, p.id, "leo-sub", { cancel: true }),
    "Sign-in was cancelled",
    "cancelled",
    p.id,
  );
});

Deno.test("an ID token with another nonce, an unknown key, alg none, past its expiry or from another issuer is refused", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", { username: "mia", email: "mia@example.com" });
  const p = await provider(svc, idp);
  idp.accounts.set("mia-sub", verified("mia"));
  const now = Math.floor(Date.now() / 1000);
  const attacks = [
    { kind: "claims" as const, change: { nonce: "another-nonce" } },
    { kind: "unknown-key" as const },
    { kind: "alg-none" as const },
    { kind: "claims" as const, change: { exp: now - 3600, iat: now - 7200 } },
    { kind: "claims" as const, change: { iss: "http://evil.test" } },
    { kind: "claims" as const, change: { aud: "another-client" } },
    // Signed by the provider's key, but nothing the service could keep.
    { kind: "claims" as const, change: { sub: "s".repeat(256) } },
    { kind: "claims" as const, change: { email: "mia\u0000@example.com" } },
  ];
  for (const attack of attacks) {
    idp.tamper = attack;
    await assertRefused(
      svc,
      await signIn(svc, p.id, "mia-sub"),
      "Identity provider refused the sign-in",
      "token",
      p.id,
    );
  }
  // The same proxy, re-signing without a change, is accepted: the key it
  // signs with is one the provider announces.
  idp.tamper = { kind: "claims", change: {} };
  assert((await signIn(svc, p.id, "mia-sub")).sid);
});

Deno.test("an e-mail outside the allowed domains, or none, is refused", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", {
    username: "nia",
    email: "nia@corp.example",
  });
  const p = await provider(svc, idp, {
    allowedDomains: ["Corp.Example"],
  });
  idp.accounts.set("nia-out", verified("nia"));
  await assertRefused(
    svc,
    await signIn(svc, p.id, "nia-out"),
    "E-mail domain not allowed",
    "domain",
    p.id,
  );
  idp.accounts.set("nia-none", { preferred_username: "nia" });
  await assertRefused(
    svc,
    await signIn(svc, p.id, "nia-none"),
    "E-mail domain not allowed",
    "domain",
    p.id,
  );
  idp.accounts.set("nia-in", {
    email: "nia@corp.example",
    email_verified: true,
  });
  assert((await signIn(svc, p.id, "nia-in")).sid);
});

Deno.test("a provider that is down: Identity provider unavailable at the start and at the callback", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("viewer", {
    username: "olga",
    email: "olga@example.com",
  });
  const dead = `http://127.0.0.1:${freePort()}`;
  const down = await provider(svc, idp, { issuer: dead });
  const start = await svc.fetch(`/api/sso/${down.id}/start`, {
    redirect: "manual",
  });
  await start.body?.cancel();
  await assertRefused(
    svc,
    land(start),
    "Identity provider unavailable",
    "unavailable",
    down.id,
  );
  // Down between the start and the callback.
  const p = await provider(svc, idp);
  idp.accounts.set("olga-sub", verified("olga"));
  const begun = await svc.fetch(`/api/sso/${p.id}/start`, {
    redirect: "manual",
  });
  const state = new URL(begun.headers.get("location")!).searchParams.get(
    "state",
  );
  const moved = await svc.adminFetch(`/api/sso/providers/${p.id}`, {
    method: "PATCH",
    body: JSON.stringify({ issuer: dead }),
  });
  assertEquals(moved.status, 200);
  const back = await svc.fetch(
    `/api/sso/${p.id}/callback?code=x&state=${state}`,
    { redirect: "manual" },
  );
  await back.body?.cancel();
  await assertRefused(
    svc,
    land(back),
    "Identity provider unavailable",
    "unavailable",
    p.id,
  );
});

Deno.test("a slow provider holds only its own sign-in; past SSO_TIMEOUT_MS it is unavailable (10 s by default)", async () => {
  const { svc, idp } = await fresh();
  assertEquals(loadConfig({}).SSO_TIMEOUT_MS, 10_000);
  const p = await provider(svc, idp);
  idp.slow = true;
  let settled = false;
  const slow = svc.fetch(`/api/sso/${p.id}/start`, { redirect: "manual" })
    .then((res) => {
      settled = true;
      return res;
    });
  await idp.held();
  // Another request is answered while the provider holds the sign-in.
  const other = await svc.fetch("/api/sso/providers/public");
  assertEquals(other.status, 200);
  await other.body?.cancel();
  const me = await svc.adminFetch("/api/auth/me");
  assertEquals(me.status, 200);
  await me.body?.cancel();
  assert(!settled, "the sign-in waited for its provider");
  idp.release();
  const answered = await slow;
  await answered.body?.cancel();
  assert(answered.headers.get("location")!.startsWith(idp.issuer));

  // A provider slower than the timeout: unavailable.
  const short = svc.configured({ SSO_TIMEOUT_MS: "200" });
  idp.slow = true;
  const timedOut = await short.fetch(`/api/sso/${p.id}/start`, {
    redirect: "manual",
  });
  await timedOut.body?.cancel();
  idp.release();
  await assertRefused(
    svc,
    land(timedOut),
    "Identity provider unavailable",
    "unavailable",
    p.id,
  );
});

Deno.test("an identity provider's second factor (amr mfa or hwk, or the configured acr) counts for MFA_REQUIRED_FOR_ADMINS", async () => {
  const { svc, idp } = await fresh();
  await svc.userClient("admin", { username: "pat", email: "pat@example.com" });
  const p = await provider(svc, idp, { mfaAcr: "urn:example:mfa" });
  idp.accounts.set("pat-sub", verified("pat"));
  const strict = svc.configured({ MFA_REQUIRED_FOR_ADMINS: "true" });
  const usersWith = async (sid: string | undefined) => {
    const res = await strict.fetch("/api/users", {
      headers: { cookie: `sid=${sid}` },
    });
    await res.body?.cancel();
    return res.status;
  };
  const plain = await signIn(strict, p.id, "pat-sub");
  assertEquals(await usersWith(plain.sid), 403);
  for (
    const change of [
      { amr: ["pwd", "mfa"] },
      { amr: ["hwk"] },
      { acr: "urn:example:mfa" },
    ]
  ) {
    idp.tamper = { kind: "claims", change };
    const strong = await signIn(strict, p.id, "pat-sub");
    assertEquals(await usersWith(strong.sid), 200, JSON.stringify(change));
  }
  idp.tamper = { kind: "claims", change: { acr: "urn:example:other" } };
  assertEquals(
    await usersWith((await signIn(strict, p.id, "pat-sub")).sid),
    403,
  );
});

Deno.test("failed sign-ins from one address are throttled per provider: Too many login attempts", async () => {
  const { svc, idp } = await fresh();
  const p = await provider(svc, idp);
  const tight = svc.configured({ LOGIN_MAX_FAILURES: "2" });
  const callback = async () => {
    const res = await tight.fetch(`/api/sso/${p.id}/callback?state=nope`, {
      redirect: "manual",
    });
    await res.body?.cancel();
    return land(res).error;
  };
  assertEquals(await callback(), "Sign-in expired, please try again");
  assertEquals(await callback(), "Sign-in expired, please try again");
  assertEquals(await callback(), "Too many login attempts");
});

Deno.test("providers: the secret is write-only and kept sealed; bad bodies answer 400; unknown ids 404", async () => {
  const { svc, idp } = await fresh();
  const p = await provider(svc, idp);
  const shown = await (await svc.adminFetch(`/api/sso/providers/${p.id}`))
    .json();
  assertEquals(shown.clientSecret, undefined);
  assertEquals(
    [shown.scopes, shown.usernameClaim, shown.allowedDomains, shown.link],
    [["openid", "email", "profile"], "preferred_username", [], "email"],
  );
  assertEquals(
    [shown.createUsers, shown.passwordLogin, shown.mfaAcr],
    [false, true, null],
  );
  const listed = await (await svc.adminFetch("/api/sso/providers")).text();
  assert(!listed.includes("the-client-secret"));
  const [row] = await svc.sql`
    select client_secret from sso_providers where id = ${p.id}`;
  assert(
    !new TextDecoder().decode(row.client_secret).includes("client-secret"),
  );
  const pub = await (await svc.fetch("/api/sso/providers/public")).json();
  assert(
    pub.some((x: { id: number; name: string }) =>
      x.id === p.id && x.name === "Test IdP" &&
      Object.keys(x).length === 2
    ),
  );
  const bad = [
    "not json",
    JSON.stringify({}),
    JSON.stringify(providerBody(idp, { issuer: "http://idp.example.com" })),
    JSON.stringify(providerBody(idp, { issuer: "ftp://127.0.0.1" })),
    JSON.stringify(providerBody(idp, { issuer: "https://x.example/?a=1" })),
    JSON.stringify(providerBody(idp, { scopes: ["email"] })),
    JSON.stringify(providerBody(idp, { link: "name" })),
    JSON.stringify(providerBody(idp, { usernameClaim: "sub" })),
    JSON.stringify(providerBody(idp, { allowedDomains: ["not a domain"] })),
    JSON.stringify(providerBody(idp, { clientSecret: "" })),
    JSON.stringify(providerBody(idp, { name: "x".repeat(101) })),
    JSON.stringify(providerBody(idp, { scimConnectionId: 999999 })),
  ];
  for (const body of bad) {
    const res = await svc.adminFetch("/api/sso/providers", {
      method: "POST",
      body,
    });
    assertEquals([res.status, await res.json()], [400, {
      error: "Invalid identity provider",
    }], body);
  }
  for (
    const [method, path] of [
      ["GET", "/api/sso/providers/999999"],
      ["PATCH", "/api/sso/providers/999999"],
      ["DELETE", "/api/sso/providers/999999"],
      ["GET", "/api/sso/999999/start"],
      ["GET", "/api/sso/999999/callback"],
      ["GET", "/api/sso/abc/start"],
    ]
  ) {
    const res = await svc.adminFetch(path, {
      method,
      body: method === "PATCH" ? "{}" : undefined,
    });
    assertEquals([res.status, await res.json()], [404, {
      error: "Identity provider not found",
    }], `${method} ${path}`);
  }
  for (const returnTo of ["//evil.example/", "https://evil.example/", "x"]) {
    const res = await svc.fetch(
      `/api/sso/${p.id}/start?returnTo=${encodeURIComponent(returnTo)}`,
    );
    assertEquals([res.status, await res.json()], [400, {
      error: "Invalid query parameter: returnTo",
    }], returnTo);
  }
  // A viewer may not see them.
  const viewer = await svc.userClient("viewer");
  const { response } = await viewer.client.GET("/api/sso/providers");
  assertEquals(response.status, 403);
  const deleted = await svc.adminFetch(`/api/sso/providers/${p.id}`, {
    method: "DELETE",
  });
  assertEquals(deleted.status, 200);
  assertEquals(
    (await newest(svc, "sso.provider_deleted"))?.details.provider,
    { id: p.id, name: "Test IdP" },
  );
});

function land(res: Response) {
  const location = res.headers.get("location");
  const sid = /^sid=([^;]+)/.exec(
    res.headers.getSetCookie().find((c) => c.startsWith("sid=")) ?? "",
  )?.[1];
  const error = location?.startsWith("/admin?")
    ? new URLSearchParams(location.slice("/admin?".length)).get("error")
    : null;
  return { status: res.status, location, sid, error };
}

Deno.test("step-up: an admin with a factor who signed in through a provider that asserted one may add a provider; without it, or past the window, not", async () => {
  const { svc, idp } = await fresh();
  const admin = await userWithTotp(svc, "admin");
  const p = await provider(svc, idp);
  idp.accounts.set("quinn-sub", {
    email: admin.account.email,
    email_verified: true,
  });
  const addWith = async (sid: string | undefined) => {
    const res = await svc.fetch("/api/sso/providers", {
      method: "POST",
      headers: { cookie: `sid=${sid}` },
      body: JSON.stringify(providerBody(idp, { name: "Another" })),
    });
    return [res.status, (await res.json()).error];
  };
  const plain = await signIn(svc, p.id, "quinn-sub");
  assertEquals(await addWith(plain.sid), [
    403,
    "Recent second factor required",
  ]);
  idp.tamper = { kind: "claims", change: { amr: ["mfa"] } };
  const strong = await signIn(svc, p.id, "quinn-sub");
  assertEquals(await addWith(strong.sid), [201, undefined]);
  await ageSecondFactor(svc, admin.account.id);
  assertEquals(await addWith(strong.sid), [
    403,
    "Recent second factor required",
  ]);
  assertEquals(
    (await newest(svc, "sso.provider_created"))?.details.provider,
    {
      id: (await svc.admin.GET("/api/sso/providers")).data!.at(-1)!.id,
      name: "Another",
    },
  );
  // Changing and deleting a provider step up too.
  const { data: all } = await svc.admin.GET("/api/sso/providers");
  const another = all!.find((x) => x.name === "Another")!;
  for (const method of ["PATCH", "DELETE"]) {
    const res = await svc.fetch(`/api/sso/providers/${another.id}`, {
      method,
      headers: { cookie: `sid=${strong.sid}` },
      body: method === "PATCH"
        ? JSON.stringify({ name: "Renamed" })
        : undefined,
    });
    assertEquals([res.status, (await res.json()).error], [
      403,
      "Recent second factor required",
    ], method);
  }
  const renamed = await svc.adminFetch(`/api/sso/providers/${another.id}`, {
    method: "PATCH",
    body: JSON.stringify({
      name: "Renamed",
      mfaAcr: "urn:x",
      clientSecret: "new-secret",
    }),
  });
  const body = await renamed.json();
  assertEquals([renamed.status, body.name, body.mfaAcr, body.clientSecret], [
    200,
    "Renamed",
    "urn:x",
    undefined,
  ]);
  assertEquals(
    (await newest(svc, "sso.provider_updated"))?.details.provider,
    { id: another.id, name: "Renamed" },
  );
});
