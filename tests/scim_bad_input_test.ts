/**
 * What SCIM answers to input it cannot take: each a SCIM error with the
 * status and scimType of RFC 7644 3.12, nothing half-applied, never a 500.
 */
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  createConnection,
  patchOp,
  scimClient,
  withFrank,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

const setUp = async () => withFrank(await service());

const q = (filter: string) => encodeURIComponent(filter);

/** How many audit records there are: a refused write adds none. */
async function recordCount(svc: TestService) {
  await svc.store.audit.seal();
  const [{ n }] = await svc.sql<{ n: number }[]>`
    select count(*)::int as n from audit_events`;
  return n;
}

Deno.test("bad filters answer 400 invalidFilter: unknown attributes, unbalanced parentheses, wrong value types, operators a type has not", async () => {
  const { idp } = await setUp();
  for (
    const filter of [
      'nickName eq "x"',
      'password eq "secret"',
      'userName eq "a" and (active eq true',
      'userName eq "a")',
      "userName eq",
      'userName xx "a"',
      'active eq "yes"',
      "active gt true",
      'meta.created gt "not a date"',
      'meta.created co "2026"',
      "userName eq 42",
      'emails[type eq "work"',
      'name[formatted eq "x"]',
    ]
  ) {
    assertScimError(
      await idp.get(`/Users?filter=${q(filter)}`),
      400,
      "invalidFilter",
    );
  }
  assertScimError(
    await idp.get(`/Groups?filter=${q('userName eq "x"')}`),
    400,
    "invalidFilter",
  );
  assertScimError(
    await idp.post("/Users/.search", { filter: "((" }),
    400,
    "invalidFilter",
  );
});

Deno.test("startIndex below 1 counts as 1, a count over 1000 is capped at 1000, a count that is no number answers 400 invalidValue", async () => {
  const { svc, idp } = await setUp();
  await svc.sql`
    insert into users (username, name, name_key, email, role, password_hash,
      username_key, email_key, username_fold, email_fold, username_skeleton,
      email_skeleton)
    select 'bulk' || i, 'Bulk ' || i, 'bulk ' || i, 'bulk' || i || '@x.test',
      'viewer', 'x', 'bulk' || i, 'bulk' || i || '@x.test', 'bulk' || i,
      'bulk' || i || '@x.test', 'bulk~' || i, 'bulk~' || i || '@x.test'
    from generate_series(1, 1005) i`;
  const zero = await idp.get("/Users?startIndex=0&count=1");
  assertEquals(zero.status, 200);
  assertEquals(zero.body.startIndex, 1);
  const capped = await idp.get("/Users?count=100000&attributes=id");
  assertEquals(capped.status, 200);
  assertEquals(capped.body.totalResults, 1007);
  assertEquals(capped.body.itemsPerPage, 1000);
  assertEquals(capped.body.Resources.length, 1000);
  const negative = await idp.get("/Users?count=-5");
  assertEquals(negative.body.itemsPerPage, 0);
  for (const query of ["count=ten", "startIndex=1.5", "sortOrder=sideways"]) {
    assertScimError(await idp.get(`/Users?${query}`), 400, "invalidValue");
  }
});

Deno.test("PATCH paths that name nothing answer invalidPath, a remove without path noTarget, read-only attributes mutability; nothing is half-applied", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await idp.get(`/Users/${userId}`);
  const records = await recordCount(svc);
  const cases: [unknown, string][] = [
    [{ op: "replace", path: "nickNames", value: "x" }, "invalidPath"],
    [{ op: "replace", path: "name.middle", value: "x" }, "invalidPath"],
    [
      { op: "add", path: 'displayName[value eq "x"]', value: "x" },
      "invalidPath",
    ],
    [{ op: "replace", path: "emails[type eq ", value: "x" }, "invalidPath"],
    [
      { op: "replace", path: "urn:example:unknown:attr", value: "x" },
      "invalidPath",
    ],
    [{ op: "remove" }, "noTarget"],
    [{ op: "replace", path: "id", value: "7" }, "mutability"],
    [{ op: "replace", path: "meta.created", value: "x" }, "mutability"],
    [{ op: "add", path: "groups", value: [{ value: "1" }] }, "mutability"],
    [{ op: "frobnicate", path: "displayName", value: "x" }, "invalidSyntax"],
  ];
  for (const [op, scimType] of cases) {
    // A valid operation first: refused with the bad one, it is not applied.
    const answer = await idp.patch(
      `/Users/${userId}`,
      patchOp({ op: "replace", path: "displayName", value: "Changed" }, op),
    );
    assertScimError(answer, 400, scimType);
  }
  assertScimError(
    await idp.patch(`/Users/${userId}`, { schemas: [] }),
    400,
    "invalidSyntax",
  );
  const after = await idp.get(`/Users/${userId}`);
  assertEquals(after.body, before.body);
  assertEquals(await recordCount(svc), records);
});

Deno.test("values of the wrong type answer 400 invalidValue, in POST, PUT and PATCH alike", async () => {
  const { svc, idp, userId } = await setUp();
  const records = await recordCount(svc);
  for (
    const body of [
      { userName: 42 },
      {},
      { userName: "" },
      { userName: "x@example.com", active: "maybe" },
      { userName: "x@example.com", emails: "x@example.com" },
      { userName: "x@example.com", name: "X" },
      { userName: "x@example.com", displayName: ["X"] },
      { userName: "x@example.com", externalId: 7 },
      { userName: "not-an-address" },
      { userName: "x@example.com", password: "short" },
      { userName: "x@example.com", title: "a".repeat(17 * 1024) },
      { userName: "x\u0000@example.com" },
      { userName: "a".repeat(255) + "@example.com" },
    ]
  ) {
    assertScimError(
      await idp.post("/Users", body),
      400,
      "invalidValue",
    );
  }
  assertScimError(
    await idp.put(`/Users/${userId}`, {
      userName: "frank@example.com",
      active: 3,
    }),
    400,
    "invalidValue",
  );
  assertScimError(
    await idp.patch(
      `/Users/${userId}`,
      patchOp({ op: "replace", path: "active", value: "yes" }),
    ),
    400,
    "invalidValue",
  );
  assertScimError(
    await idp.patch(
      `/Users/${userId}`,
      patchOp({ op: "replace", value: "not an object" }),
    ),
    400,
    "invalidValue",
  );
  assertScimError(
    await idp.post("/Users", "{not json"),
    400,
    "invalidSyntax",
  );
  assertScimError(await idp.post("/Users", "[1, 2]"), 400, "invalidSyntax");
  assertEquals(await recordCount(svc), records);
});

Deno.test("a taken userName (in any case or a look-alike) or externalId answers 409 uniqueness; another connection may use the same externalId", async () => {
  const { svc, idp } = await setUp();
  for (
    const body of [
      { userName: "FRANK@example.com" },
      { userName: "frank@examp1e.com", emails: [{ value: "f2@example.com" }] },
      { userName: "other@example.com", externalId: "ext-frank" },
      {
        userName: "other@example.com",
        emails: [{ value: "frank@example.com" }],
      },
    ]
  ) {
    assertScimError(await idp.post("/Users", body), 409, "uniqueness");
  }
  const other = scimClient(svc, (await createConnection(svc, "Entra")).token);
  const same = await other.post("/Users", {
    userName: "other@example.com",
    externalId: "ext-frank",
  });
  assertEquals(same.status, 201);
  const taken = await other.patch(
    `/Users/${same.body.id}`,
    patchOp({ op: "replace", path: "userName", value: "Frank@Example.com" }),
  );
  assertScimError(taken, 409, "uniqueness");
  assertEquals(
    (await other.get(`/Users/${same.body.id}`)).body.userName,
    "other@example.com",
  );
});

Deno.test("a group member that does not exist answers 400 invalidValue and no member of the request is added", async () => {
  const { svc, idp, userId } = await setUp();
  assertScimError(
    await idp.post("/Groups", {
      displayName: "g",
      members: [{ value: userId }, { value: "999999" }],
    }),
    400,
    "invalidValue",
  );
  assertScimError(
    await idp.post("/Groups", {
      displayName: "g",
      members: [{ value: "abc" }],
    }),
    400,
    "invalidValue",
  );
  assertScimError(
    await idp.post("/Groups", { members: [] }),
    400,
    "invalidValue",
  );
  const group = await idp.post("/Groups", { displayName: "g" });
  const records = await recordCount(svc);
  const answer = await idp.patch(
    `/Groups/${group.body.id}`,
    patchOp({
      op: "add",
      path: "members",
      value: [{ value: userId }, { value: "2147483000" }],
    }),
  );
  assertScimError(answer, 400, "invalidValue");
  assertEquals((await idp.get(`/Groups/${group.body.id}`)).body.members, []);
  assertEquals(await recordCount(svc), records);
});

Deno.test("a body over 4 MiB answers 413; one under it is read", async () => {
  const { idp } = await setUp();
  const big = JSON.stringify({
    userName: "big@example.com",
    title: "x".repeat(10 * 1024 * 1024),
  });
  const answer = await idp.post("/Users", big);
  assertScimError(answer, 413);
  const group = await idp.post("/Groups", { displayName: "many" });
  const members = Array.from({ length: 60_000 }, (_, i) => ({
    value: String(2_000_000_000 + i),
  }));
  // 3 MiB of members: read, then refused for naming no user.
  assertScimError(
    await idp.patch(
      `/Groups/${group.body.id}`,
      patchOp({ op: "add", path: "members", value: members }),
    ),
    400,
    "invalidValue",
  );
});

Deno.test("a connection sees only its own groups and externalIds; a revoked or unknown token answers 401", async () => {
  const { svc, idp, userId } = await setUp();
  const group = await idp.post("/Groups", {
    displayName: "mine",
    members: [{ value: userId }],
  });
  const otherConn = await createConnection(svc, "Entra");
  const other = scimClient(svc, otherConn.token);
  const gid = group.body.id;
  assertScimError(await other.get(`/Groups/${gid}`), 404);
  assertScimError(
    await other.patch(
      `/Groups/${gid}`,
      patchOp({ op: "replace", path: "displayName", value: "theirs" }),
    ),
    404,
  );
  assertScimError(await other.delete(`/Groups/${gid}`), 404);
  assertEquals((await other.get("/Groups")).body.totalResults, 0);
  assertEquals(
    (await other.get(`/Users?filter=${q('externalId eq "ext-frank"')}`)).body
      .totalResults,
    0,
  );
  assertEquals(
    (await other.get(`/Users/${userId}`)).body.externalId,
    undefined,
  );
  assertEquals((await idp.get(`/Groups/${gid}`)).body.displayName, "mine");
  assertScimError(await idp.get("/Users/99999999"), 404);
  assertScimError(await idp.get("/Users/abc"), 404);
  // Paths and methods SCIM has no route for: still its error form.
  assertScimError(await idp.get("/Devices"), 404);
  assertScimError(await idp.get("/Users/abc/def"), 404);
  assertScimError(await idp.post("/Users/abc", {}), 405);

  await svc.admin.DELETE("/api/scim/connections/{id}", {
    params: { path: { id: otherConn.id } },
  });
  assertScimError(await other.get("/Users"), 401);
  assertScimError(
    await scimClient(svc, "usc_" + "A".repeat(43)).get("/Users"),
    401,
  );
  assertScimError(
    await idp.delete(`/Users/${userId}`, { "if-match": "garbage" }),
    412,
  );
});

Deno.test("a PATCH whose filter meets an element it made without a value answers 400 and changes nothing, never 500", async () => {
  const { idp, userId } = await setUp();
  const before = await idp.get(`/Users/${userId}`);
  // The first operation makes a work e-mail without a value; the second's
  // filter then compares a value that is not there.
  const res = await idp.patch(
    `/Users/${userId}`,
    patchOp(
      { op: "add", path: 'emails[type eq "work"].value' },
      { op: "add", path: 'emails[value co "e1"]' },
    ),
  );
  assertScimError(res, 400, "invalidValue");
  const after = await idp.get(`/Users/${userId}`);
  assertEquals(after.body, before.body);
});
