/**
 * PATCH `remove` as RFC 7644 3.5.2.2 has it: "If the target location is a
 * single-value attribute, the attribute and its associated value is
 * removed, and the attribute SHALL be considered unassigned." The answer
 * and every later read no longer show it, the account's name falls back to
 * its next source, what an account cannot be without is refused, and a
 * write that changes nothing leaves the version and the audit trail alone.
 */
import { assertEquals } from "./support/assert.ts";
import { newUser, sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  ENTERPRISE,
  patchOp,
  type ScimAnswer,
  scimClient,
  scimState,
  USER_SCHEMA,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

async function setUp() {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  return { svc, idp: scimClient(svc, conn.token) };
}

/** The account as /api shows it: its name and e-mail. */
async function account(svc: TestService, id: string) {
  const { data } = await svc.admin.GET("/api/users/{id}", {
    params: { path: { id: Number(id) } },
  });
  return { name: data!.name, email: data!.email };
}

/** A user made through /api, named otherwise than its username; its id. */
async function apiUser(svc: TestService, username: string, name: string) {
  const { data } = await svc.admin.POST("/api/users", {
    body: { ...newUser(username), name },
  });
  return String(data!.id);
}

const remove = (path: string) => patchOp({ op: "remove", path });

/** The answer's status, scimType and detail, for a list of them at once. */
const said = (a: ScimAnswer) => {
  assertScimError(a, a.status, a.body?.scimType);
  return [a.status, a.body.scimType, a.body.detail];
};

Deno.test('RFC 7644 3.5.2.2 "the attribute SHALL be considered unassigned": removing displayName, then name, leaves neither in the answer or a read, the name falling back to given and family name, then userName', async () => {
  const { svc, idp } = await setUp();
  const made = await idp.post("/Users", {
    schemas: [USER_SCHEMA, ENTERPRISE],
    userName: "bjensen",
    name: { givenName: "Barbara", familyName: "Jensen" },
    displayName: "Babs",
    title: "Tour Guide",
    emails: [{ value: "bjensen@example.com", type: "work", primary: true }],
    [ENTERPRISE]: { department: "Tours", employeeNumber: "701984" },
  });
  assertEquals(made.status, 201, JSON.stringify(made.body));
  const id = made.body.id as string;
  assertEquals((await account(svc, id)).name, "Babs");

  const noDisplay = await idp.patch(`/Users/${id}`, remove("displayName"));
  assertEquals(noDisplay.status, 200, JSON.stringify(noDisplay.body));
  assertEquals(noDisplay.body.displayName, undefined);
  assertEquals(noDisplay.body.name, {
    givenName: "Barbara",
    familyName: "Jensen",
  });
  assertEquals((await account(svc, id)).name, "Barbara Jensen");

  const noName = await idp.patch(`/Users/${id}`, remove("name"));
  assertEquals(noName.status, 200, JSON.stringify(noName.body));
  assertEquals(
    [noName.body.name, noName.body.displayName],
    [undefined, undefined],
  );
  assertEquals((await account(svc, id)).name, "bjensen");

  // Attributes kept as sent go the same way, the extension's too.
  const rest = await idp.patch(
    `/Users/${id}`,
    patchOp(
      { op: "remove", path: "title" },
      { op: "remove", path: `${ENTERPRISE}:department` },
      { op: "remove", path: `${ENTERPRISE}:employeeNumber` },
    ),
  );
  assertEquals(rest.status, 200, JSON.stringify(rest.body));
  const read = await idp.get(`/Users/${id}`);
  for (const answer of [rest, read]) {
    assertEquals(answer.body.title, undefined);
    assertEquals(answer.body[ENTERPRISE], undefined);
    assertEquals(answer.body.schemas, [USER_SCHEMA]);
    assertEquals([answer.body.name, answer.body.displayName], [
      undefined,
      undefined,
    ]);
  }
  assertEquals(read.body.meta.version, rest.body.meta.version);
});

Deno.test('RFC 7644 3.5.2.2 "SHALL be considered unassigned": removing name makes the name the displayName; removing name.givenName drops it alone', async () => {
  const { svc, idp } = await setUp();
  const made = await idp.post("/Users", {
    userName: "kim@example.com",
    name: {
      formatted: "Ms. Kim Lee",
      givenName: "Kim",
      familyName: "Lee",
    },
    displayName: "Kim L.",
  });
  const id = made.body.id as string;
  assertEquals((await account(svc, id)).name, "Ms. Kim Lee");

  const given = await idp.patch(`/Users/${id}`, remove("name.givenName"));
  assertEquals(given.body.name, {
    formatted: "Ms. Kim Lee",
    familyName: "Lee",
  });

  const noName = await idp.patch(`/Users/${id}`, remove("name"));
  assertEquals(noName.status, 200, JSON.stringify(noName.body));
  assertEquals(noName.body.name, undefined);
  assertEquals(noName.body.displayName, "Kim L.");
  assertEquals((await idp.get(`/Users/${id}`)).body.name, undefined);
  assertEquals((await account(svc, id)).name, "Kim L.");
});

Deno.test('RFC 7644 3.5.2.2 "SHALL be considered unassigned" for a user made through /api: what the read showed of the account can be removed, and stays removed', async () => {
  const { svc, idp } = await setUp();
  const id = await apiUser(svc, "dana", "Dana Scully");
  const read = await idp.get(`/Users/${id}`);
  assertEquals(
    [read.body.name, read.body.displayName],
    [{ formatted: "Dana Scully" }, "Dana Scully"],
  );

  const noDisplay = await idp.patch(`/Users/${id}`, remove("displayName"));
  assertEquals(noDisplay.status, 200, JSON.stringify(noDisplay.body));
  assertEquals(noDisplay.body.displayName, undefined);
  assertEquals(noDisplay.body.name, { formatted: "Dana Scully" });
  assertEquals((await idp.get(`/Users/${id}`)).body.displayName, undefined);
  assertEquals((await account(svc, id)).name, "Dana Scully");

  const noName = await idp.patch(`/Users/${id}`, remove("name"));
  assertEquals(
    [noName.body.name, noName.body.displayName],
    [undefined, undefined],
  );
  assertEquals((await account(svc, id)).name, "dana");
});

// RFC 7644 3.5.2.2: "If an attribute is removed or becomes unassigned and
// is defined as a required attribute or a read-only attribute, the server
// SHALL return an HTTP response status code and a JSON detail error
// response". Its scimType here is invalidValue, the one every value the
// service cannot take answers (the RFC's sentence names mutability).
Deno.test("RFC 7644 3.5.2.2: a remove that would leave userName, active or the only e-mail unassigned answers 400 invalidValue and changes nothing", async () => {
  const { svc, idp } = await setUp();
  // Its userName is an address, which stands in for a missing e-mail when
  // a user is written whole, never for one a PATCH removes.
  const made = await idp.post("/Users", {
    userName: "frank@example.com",
    displayName: "Frank",
    emails: [{ value: "frank@work.example", type: "work", primary: true }],
  });
  const id = made.body.id as string;
  const before = await scimState(svc);
  const answers = [];
  for (
    const operations of [
      [{ op: "remove", path: "userName" }],
      [{ op: "remove", path: "active" }],
      [{ op: "Remove", path: "emails" }],
      [{ op: "remove", path: 'emails[value eq "frank@work.example"]' }],
      [{ op: "remove", path: "emails.value" }],
      [{ op: "replace", path: "active", value: null }],
      [{ op: "replace", path: "displayName", value: "F" }, {
        op: "remove",
        path: "emails",
      }],
    ]
  ) {
    answers.push(said(await idp.patch(`/Users/${id}`, patchOp(...operations))));
  }
  assertEquals(answers, [
    [400, "invalidValue", "userName cannot be removed"],
    [400, "invalidValue", "active cannot be removed"],
    [400, "invalidValue", "emails cannot be removed"],
    [400, "invalidValue", "emails cannot be removed"],
    [400, "invalidValue", "emails cannot be removed"],
    [400, "invalidValue", "active cannot be removed"],
    [400, "invalidValue", "emails cannot be removed"],
  ]);
  assertEquals(await scimState(svc), before);
  const read = await idp.get(`/Users/${id}`);
  assertEquals(read.body.meta.version, made.body.meta.version);
  assertEquals(read.body.emails, [{
    value: "frank@work.example",
    type: "work",
    primary: true,
  }]);

  // A group cannot be without its displayName either.
  const group = await idp.post("/Groups", { displayName: "Sales" });
  assertEquals(
    said(await idp.patch(`/Groups/${group.body.id}`, remove("displayName"))),
    [400, "invalidValue", "displayName cannot be removed"],
  );
  assertEquals(
    (await idp.get(`/Groups/${group.body.id}`)).body.displayName,
    "Sales",
  );

  // One e-mail removed and another added in the same PATCH replace it.
  const swapped = await idp.patch(
    `/Users/${id}`,
    patchOp({ op: "remove", path: "emails" }, {
      op: "add",
      path: "emails",
      value: [{ value: "frank@home.example", type: "home" }],
    }),
  );
  assertEquals(swapped.status, 200, JSON.stringify(swapped.body));
  assertEquals((await account(svc, id)).email, "frank@home.example");
});

Deno.test("meta.version moves only when something changed: a PATCH or a PUT that asks for what is there leaves the version, lastModified and the audit trail as they were", async () => {
  const { svc, idp } = await setUp();
  const scim = await idp.post("/Users", {
    userName: "gail@example.com",
    displayName: "Gail",
    title: "Engineer",
  });
  const api = await apiUser(svc, "hank", "Hank Moody");
  for (const id of [scim.body.id as string, api]) {
    const read = await idp.get(`/Users/${id}`);
    const before = await scimState(svc);
    const same = [
      // RFC 7644 3.5.2.2: removing what is not there changes nothing.
      remove("nickName"),
      remove('phoneNumbers[type eq "fax"]'),
      patchOp({
        op: "replace",
        path: "displayName",
        value: read.body.displayName,
      }),
      patchOp({ op: "replace", path: "active", value: "True" }),
      patchOp({
        op: "add",
        value: { emails: read.body.emails, name: read.body.name },
      }),
    ];
    for (const body of same) {
      const answer = await idp.patch(`/Users/${id}`, body);
      assertEquals(answer.status, 200, JSON.stringify(answer.body));
      assertEquals(answer.body.meta, read.body.meta, JSON.stringify(body));
      assertEquals(answer.headers.get("etag"), read.body.meta.version);
    }
    const { meta: _, ...resource } = read.body;
    const put = await idp.put(`/Users/${id}`, resource);
    assertEquals(put.status, 200, JSON.stringify(put.body));
    assertEquals(put.body.meta, read.body.meta);
    assertEquals(await scimState(svc), before);
    assertEquals((await idp.get(`/Users/${id}`)).body, read.body);

    const changed = await idp.patch(`/Users/${id}`, remove("displayName"));
    assertEquals(changed.status, 200);
    assertEquals(changed.body.meta.version !== read.body.meta.version, true);
  }
});

Deno.test("PUT with emails [] and a userName that is an address: the userName stands in as the e-mail, and the read shows it, as /Schemas declares emails required", async () => {
  const { svc, idp } = await setUp();
  const made = await idp.post("/Users", {
    userName: "ivy@example.com",
    emails: [{ value: "ivy@work.example", type: "work", primary: true }],
  });
  const id = made.body.id as string;
  const put = await idp.put(`/Users/${id}`, {
    schemas: [USER_SCHEMA],
    userName: "ivy@example.com",
    emails: [],
  });
  assertEquals(put.status, 200, JSON.stringify(put.body));
  const shown = [{ value: "ivy@example.com", type: "work", primary: true }];
  assertEquals(put.body.emails, shown);
  assertEquals((await idp.get(`/Users/${id}`)).body.emails, shown);
  assertEquals((await account(svc, id)).email, "ivy@example.com");
  // Without an address to stand in, it is refused.
  const refused = await idp.put(`/Users/${id}`, {
    userName: "ivy",
    emails: [],
  });
  assertEquals(said(refused), [
    400,
    "invalidValue",
    "an e-mail address is required (emails, or a userName that is one)",
  ]);
});
