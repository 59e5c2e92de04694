/**
 * One refusal, each surface's form: the store refuses a name another user
 * holds as `duplicate` whichever door asked, and the API answers it as
 * `{error}`, SCIM as RFC 7644's error schema, an import as its line's
 * error.
 */
import { isRefusal, type Refusal, refuse } from "../src/refusal.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { ndjson, person, runImport } from "./support/imports.ts";
import { sharedService } from "./support/service.ts";
import {
  clearScim,
  createConnection,
  ERROR_SCHEMA,
  SCIM_MEDIA_TYPE,
  scimClient,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

Deno.test("a refusal is told apart from any answer, and narrows by its reason", () => {
  const refused: { id: number } | Refusal<"duplicate"> = refuse(
    "duplicate",
    "userName is already taken",
  );
  assert(isRefusal(refused));
  assertEquals(refused.reason, "duplicate");
  assertEquals(refused.detail, "userName is already taken");
  for (
    const answer of [undefined, null, "duplicate", { reason: "duplicate" }]
  ) {
    assert(!isRefusal(answer), JSON.stringify(answer));
  }
});

Deno.test("a name taken is refused as duplicate by every door, each in its own form", async () => {
  const svc = await service();
  await clearScim(svc);
  const taken = {
    username: "refused-dora",
    name: "Dora",
    email: "refused-dora@example.com",
  };
  const made = await svc.adminFetch("/api/users", {
    method: "POST",
    body: JSON.stringify({
      ...taken,
      password: "dora-password",
      role: "viewer",
    }),
  });
  assertEquals(made.status, 201, await made.clone().text());

  // The API: 409 and the contract's message, nothing more.
  const api = await svc.adminFetch("/api/users", {
    method: "POST",
    body: JSON.stringify({
      ...taken,
      email: "another-dora@example.com",
      password: "dora-password",
      role: "viewer",
    }),
  });
  assertEquals(api.status, 409);
  assertEquals(await api.json(), { error: "Username or email already exists" });

  // SCIM: 409 uniqueness, the refusal's detail in words.
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const scim = await idp.post("/Users", {
    userName: taken.username,
    displayName: "Dora",
    emails: [{ value: "third-dora@example.com", primary: true }],
  });
  assertEquals(scim.status, 409);
  assertEquals(scim.headers.get("content-type"), SCIM_MEDIA_TYPE);
  assertEquals(scim.body, {
    schemas: [ERROR_SCHEMA],
    status: "409",
    scimType: "uniqueness",
    detail: "userName is already taken",
  });
  const email = await idp.post("/Users", {
    userName: "refused-dora-2",
    displayName: "Dora",
    emails: [{ value: taken.email, primary: true }],
  });
  assertEquals(email.status, 409);
  assertEquals(email.body.detail, "the e-mail address is already taken");

  // An import: the line's error, in the API's words.
  const { done, errors } = await runImport(
    svc,
    ndjson([
      person("refused-eve", { password: "eve-password-1" }),
      person(taken.username, {
        email: "fourth-dora@example.com",
        password: "dora-password",
      }),
    ]),
  );
  assertEquals(done.created, 1);
  assertEquals(errors, [{
    line: 2,
    error: "Username or email already exists",
  }]);
});

Deno.test("a record breaking a rule is refused with the message POST /api/users answers it with", async () => {
  const svc = await service();
  const record = person("refused-frank", {
    role: "owner",
    password: "pw-12345678",
  });
  const api = await svc.adminFetch("/api/users", {
    method: "POST",
    body: JSON.stringify(record),
  });
  assertEquals(api.status, 400);
  assertEquals(await api.json(), { error: "Role must be admin or viewer" });
  const { errors } = await runImport(svc, ndjson([record]));
  assertEquals(errors, [{ line: 1, error: "Role must be admin or viewer" }]);
});
