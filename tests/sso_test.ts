/**
 * Signing in with an identity provider (docs/sso.md) against a real
 * OpenID Connect provider started locally (tests/sso_support.ts): the
 * account each sign-in lands on, and every bad input refused with its
 * message, a record, and no session.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
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
