/**
 * Step-up at every door that changes an admin: a session whose second
 * factor is older than MFA_STEP_UP_SECONDS makes no admin and changes no
 * admin's account, whichever endpoint it tries, until it steps up again.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";
import { ageSecondFactor, freshCode, userWithTotp } from "./mfa_support.ts";

const service = sharedService({}, { bcryptCost: 4 });
const RECENT = "Recent second factor required";

Deno.test("a session past its step-up window cannot reset another admin's password, demote or disable them; a viewer's it can; after a step-up it can", async () => {
  const svc = await service();
  const admin = await userWithTotp(svc, "admin");
  const other = await svc.userClient("admin");
  const viewer = await svc.userClient("viewer");
  await ageSecondFactor(svc, admin.account.id);
  const c = admin.client;
  const refused = (answer: { status: number; ok: boolean }) => {
    const res = answer as { status: number; ok: false; error: string };
    assertEquals([res.status, res.error], [403, RECENT]);
  };
  const otherId = { params: { path: { id: other.account.id } } };
  refused(
    await c.patch("/api/users/{id}", {
      ...otherId,
      body: { password: "taken-over-password" },
    }),
  );
  refused(
    await c.patch("/api/users/{id}", { ...otherId, body: { role: "viewer" } }),
  );
  refused(await c.post("/api/users/{id}/disable", otherId));
  // Nothing changed: the admin still signs in with their own password.
  assert((await svc.client().login(other.account.username, other.password)).ok);
  const [{ role, disabled }] = await svc.sql<
    { role: string; disabled: boolean }[]
  >`select role, disabled_at is not null as disabled from users
    where id = ${other.account.id}`;
  assertEquals([role, disabled], ["admin", false]);

  // A viewer's account is no admin's: no step-up.
  const viewerId = { params: { path: { id: viewer.account.id } } };
  assertEquals(
    (await c.patch("/api/users/{id}", {
      ...viewerId,
      body: { password: "a-new-viewer-password" },
    })).status,
    200,
  );
  assertEquals((await c.post("/api/users/{id}/disable", viewerId)).status, 200);
  // An unknown user is still the endpoint's own 404.
  const missing = await c.patch("/api/users/{id}", {
    params: { path: { id: 2_000_000_000 } },
    body: { password: "another-password" },
  });
  assertEquals(missing.status, 404);

  const stepped = await c.stepUp({
    code: await freshCode(svc, admin.account.id, admin.secret),
  });
  assert(stepped.ok);
  assertEquals(
    (await c.patch("/api/users/{id}", {
      ...otherId,
      body: { password: "reset-after-step-up" },
    })).status,
    200,
  );
});

Deno.test("a session past its step-up window cannot change a provisioning connection's admin groups; its name it can", async () => {
  const svc = await service();
  const created = await svc.admin.post("/api/scim/connections", {
    body: { name: "Okta" },
  });
  assert(created.ok);
  const admin = await userWithTotp(svc, "admin");
  await ageSecondFactor(svc, admin.account.id);
  const c = admin.client;
  const id = { params: { path: { id: created.data.id } } };
  const grant = await c.patch("/api/scim/connections/{id}", {
    ...id,
    body: { adminGroups: ["Everyone"] },
  });
  assert(!grant.ok);
  assertEquals([grant.status, grant.error], [403, RECENT]);
  const rename = await c.patch("/api/scim/connections/{id}", {
    ...id,
    body: { name: "Okta (production)" },
  });
  assert(rename.ok);
  assertEquals(rename.data.adminGroups, []);
  const stepped = await c.stepUp({
    code: await freshCode(svc, admin.account.id, admin.secret),
  });
  assert(stepped.ok);
  const granted = await c.patch("/api/scim/connections/{id}", {
    ...id,
    body: { adminGroups: ["Admins"] },
  });
  assert(granted.ok);
  assertEquals(granted.data.adminGroups, ["Admins"]);
});

Deno.test("an admin without a second factor changes other admins without a step-up, as before", async () => {
  const svc = await service();
  const other = await svc.userClient("admin");
  const res = await svc.admin.patch("/api/users/{id}", {
    params: { path: { id: other.account.id } },
    body: { password: "plain-reset-password" },
  });
  assertEquals(res.status, 200);
});
