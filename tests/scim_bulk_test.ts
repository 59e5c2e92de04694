/**
 * SCIM Bulk (RFC 7644 3.7): operations run in order, each as its single
 * request would (status, version, location, audit records), `bulkId`
 * references between them, `failOnErrors`, and the limits advertised in
 * ServiceProviderConfig and answered 413 past them.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  ERROR_SCHEMA,
  GROUP_SCHEMA,
  patchOp,
  type ScimAnswer,
  USER_SCHEMA,
  withFrank,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

const BULK_REQUEST = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";
const BULK_RESPONSE = "urn:ietf:params:scim:api:messages:2.0:BulkResponse";

const bulkOf = (Operations: unknown[], failOnErrors?: number) => ({
  schemas: [BULK_REQUEST],
  ...failOnErrors !== undefined && { failOnErrors },
  Operations,
});

const newUser = (bulkId: string, userName: string) => ({
  method: "POST",
  path: "/Users",
  bulkId,
  data: { schemas: [USER_SCHEMA], userName },
});

/** The BulkResponse's operations, asserting its form. */
function operationsOf(answer: ScimAnswer) {
  assertEquals(answer.status, 200, JSON.stringify(answer.body));
  assertEquals(answer.body.schemas, [BULK_RESPONSE]);
  // deno-lint-ignore no-explicit-any
  return answer.body.Operations as any[];
}

/** A failed operation's answer: its status, and its SCIM error's scimType and detail. */
// deno-lint-ignore no-explicit-any
const failureOf = (op: any) => {
  assertEquals(op.response.schemas, [ERROR_SCHEMA]);
  assertEquals(op.response.status, op.status);
  return [op.status, op.response.scimType, op.response.detail];
};

const userNames = async (svc: TestService) =>
  (await svc.sql<{ username: string }[]>`
    select username from users order by id`).map((u) => u.username);

Deno.test("ServiceProviderConfig advertises bulk: supported, at most 1000 operations and 4194304 bytes", async () => {
  const { idp } = await withFrank(await service());
  const config = await idp.get("/ServiceProviderConfig");
  assertEquals(config.body.bulk, {
    supported: true,
    maxOperations: 1000,
    maxPayloadSize: 4194304,
  });
});

Deno.test("a group created with bulkId:<id> as a member has the user the same Bulk created; each answer has its status, location and version", async () => {
  const { idp } = await withFrank(await service());
  const answer = await idp.post(
    "/Bulk",
    bulkOf([
      newUser("ann", "ann@example.com"),
      {
        method: "POST",
        path: "/Groups",
        bulkId: "team",
        data: {
          schemas: [GROUP_SCHEMA],
          displayName: "Team",
          members: [{ value: "bulkId:ann" }],
        },
      },
      {
        method: "PATCH",
        path: "/Groups/bulkId:team",
        data: patchOp({ op: "replace", path: "displayName", value: "Team A" }),
      },
    ]),
  );
  const [user, group, renamed] = operationsOf(answer);
  const userId = user.location.split("/").at(-1);
  const groupId = group.location.split("/").at(-1);
  const readUser = await idp.get(`/Users/${userId}`);
  assertEquals(readUser.body.userName, "ann@example.com");
  const readGroup = await idp.get(`/Groups/${groupId}`);
  assertEquals(readGroup.body.displayName, "Team A");
  assertEquals(
    readGroup.body.members.map((m: { value: string }) => m.value),
    [userId],
  );
  assertEquals([user, group, renamed], [
    {
      method: "POST",
      bulkId: "ann",
      location: readUser.body.meta.location,
      version: readUser.body.meta.version,
      status: "201",
    },
    {
      method: "POST",
      bulkId: "team",
      location: readGroup.body.meta.location,
      // The rename after it moved the group's version on.
      version: group.version,
      status: "201",
    },
    {
      method: "PATCH",
      location: readGroup.body.meta.location,
      version: readGroup.body.meta.version,
      status: "200",
    },
  ]);
  assert(group.version !== renamed.version);
});

Deno.test("an operation that refers to a bulkId which failed or never came answers 400 invalidValue Unresolved bulkId: <id>; the others run", async () => {
  const { svc, idp } = await withFrank(await service());
  const before = await userNames(svc);
  const answer = await idp.post(
    "/Bulk",
    bulkOf([
      // Taken: frank is provisioned already.
      newUser("dup", "frank@example.com"),
      {
        method: "POST",
        path: "/Groups",
        data: { displayName: "G1", members: [{ value: "bulkId:dup" }] },
      },
      { method: "DELETE", path: "/Users/bulkId:later" },
      {
        method: "PUT",
        path: "/Users/bulkId:nowhere",
        data: { userName: "x@example.com" },
      },
      newUser("later", "later@example.com"),
    ]),
  );
  const ops = operationsOf(answer);
  assertEquals(ops.slice(0, 4).map(failureOf), [
    ["409", "uniqueness", ops[0].response.detail],
    ["400", "invalidValue", "Unresolved bulkId: dup"],
    ["400", "invalidValue", "Unresolved bulkId: later"],
    ["400", "invalidValue", "Unresolved bulkId: nowhere"],
  ]);
  assertEquals(ops[0].location, undefined);
  assertEquals(ops[4].status, "201");
  assertEquals(await userNames(svc), [...before, "later@example.com"]);
  const groups = await svc.sql`select 1 from scim_groups`;
  assertEquals(groups.length, 0);
});

Deno.test("a Bulk is not atomic: an error in the middle leaves the operations before it applied, and those after it run", async () => {
  const { svc, idp, userId } = await withFrank(await service());
  const before = await userNames(svc);
  const answer = await idp.post(
    "/Bulk",
    bulkOf([
      newUser("a", "a@example.com"),
      {
        method: "PATCH",
        path: `/Users/${userId}`,
        data: patchOp({ op: "replace", path: "displayName", value: "F" }),
      },
      // Invalid: not an e-mail, no e-mails.
      newUser("b", "not an address"),
      newUser("c", "c@example.com"),
    ]),
  );
  const ops = operationsOf(answer);
  assertEquals(ops.map((o) => o.status), ["201", "200", "400", "201"]);
  assertEquals(failureOf(ops[2])[1], "invalidValue");
  assertEquals(await userNames(svc), [
    ...before,
    "a@example.com",
    "c@example.com",
  ]);
  assertEquals((await idp.get(`/Users/${userId}`)).body.displayName, "F");
});

Deno.test("creations in a row answer as each alone would: the version and location a GET reads, a name taken before or earlier in the request 409, a user.created record each", async () => {
  const { svc, idp } = await withFrank(await service());
  const made = operationsOf(
    await idp.post(
      "/Bulk",
      bulkOf([newUser("p", "p@example.com"), newUser("q", "q@example.com")]),
    ),
  );
  assertEquals(made.map((o) => o.status), ["201", "201"]);
  for (const o of made) {
    const read = await idp.get(o.location.slice(o.location.indexOf("/Users")));
    assertEquals(read.status, 200);
    assertEquals(read.headers.get("etag"), o.version);
    assertEquals(read.body.meta.location, o.location);
  }

  const before = await userNames(svc);
  const again = operationsOf(
    await idp.post(
      "/Bulk",
      bulkOf([
        newUser("r", "r@example.com"),
        newUser("s", "s@example.com"),
        newUser("r2", "R@example.com"),
        newUser("t", "frank@example.com"),
        newUser("u", "u@example.com"),
      ]),
    ),
  );
  assertEquals(again.map((o) => o.status), ["201", "201", "409", "409", "201"]);
  assertEquals(failureOf(again[2])[1], "uniqueness");
  assertEquals(await userNames(svc), [
    ...before,
    "r@example.com",
    "s@example.com",
    "u@example.com",
  ]);
  await svc.store.audit.seal();
  const records = await svc.sql<{ target: string }[]>`
    select target_username as target from audit_events
    where action = 'user.created' and target_username = any(${[
    "p@example.com",
    "q@example.com",
    "r@example.com",
    "s@example.com",
    "u@example.com",
  ]})
    order by id`;
  assertEquals(records.map((r) => r.target), [
    "p@example.com",
    "q@example.com",
    "r@example.com",
    "s@example.com",
    "u@example.com",
  ]);
});

Deno.test("failOnErrors n: the operations after the n-th failure are not run, and not answered", async () => {
  const { svc, idp } = await withFrank(await service());
  const before = await userNames(svc);
  const operations = [
    newUser("1", "one@example.com"),
    newUser("2", "frank@example.com"),
    newUser("3", "three@example.com"),
    { method: "DELETE", path: "/Users/2000000000" },
    newUser("5", "five@example.com"),
  ];
  const once = operationsOf(await idp.post("/Bulk", bulkOf(operations, 1)));
  assertEquals(once.map((o) => o.status), ["201", "409"]);
  assertEquals(await userNames(svc), [...before, "one@example.com"]);

  // The same again: one@ is now taken too.
  const twice = operationsOf(await idp.post("/Bulk", bulkOf(operations, 2)));
  assertEquals(twice.map((o) => o.status), ["409", "409"]);

  const thrice = operationsOf(await idp.post("/Bulk", bulkOf(operations, 3)));
  assertEquals(thrice.map((o) => o.status), ["409", "409", "201", "404"]);
  assertEquals(failureOf(thrice[3])[2], "Resource not found");

  const all = operationsOf(await idp.post("/Bulk", bulkOf(operations)));
  assertEquals(all.map((o) => o.status), ["409", "409", "409", "404", "201"]);
  assertEquals(await userNames(svc), [
    ...before,
    "one@example.com",
    "three@example.com",
    "five@example.com",
  ]);
});

Deno.test("past maxOperations or maxPayloadSize a Bulk answers 413 Too many operations / Payload too large, and runs nothing", async () => {
  const { svc, idp } = await withFrank(await service());
  const before = await userNames(svc);
  const many = Array.from(
    { length: 1001 },
    (_, i) => newUser(`u${i}`, `u${i}@example.com`),
  );
  const tooMany = await idp.post("/Bulk", bulkOf(many));
  assertScimError(tooMany, 413);
  assertEquals(tooMany.body.detail, "Too many operations");

  const big = bulkOf([{
    ...newUser("big", "big@example.com"),
    data: { userName: "big@example.com", title: "x".repeat(4 * 1024 * 1024) },
  }]);
  const tooLarge = await idp.post("/Bulk", big);
  assertScimError(tooLarge, 413);
  assertEquals(tooLarge.body.detail, "Payload too large");
  assertEquals(await userNames(svc), before);

  // At the limit: 1000 operations run.
  const at = operationsOf(await idp.post("/Bulk", bulkOf(many.slice(0, 1000))));
  assertEquals(at.length, 1000);
  assert(at.every((o) => o.status === "201"));
});

Deno.test("each operation of a Bulk records the audit records its single request records, naming the connection", async () => {
  const { svc, conn, idp, userId } = await withFrank(await service());
  const trail = async () => {
    await svc.store.audit.seal();
    return await svc.sql<
      { action: string; connection: unknown; request: string }[]
    >`
      select action, details->'connection' as connection,
        request_id as request
      from audit_events where details ? 'connection' order by id`;
  };
  // Each run renames Frank anew: a PUT that changes nothing records nothing.
  const ops = (user: string, group: string, name: string, version?: string) => [
    {
      method: "PUT",
      path: `/Users/${userId}`,
      version,
      data: {
        userName: "frank@example.com",
        displayName: name,
        active: false,
      },
    },
    {
      method: "PATCH",
      path: `/Users/${userId}`,
      data: patchOp({ op: "replace", path: "active", value: true }),
    },
    newUser("n", user),
    {
      method: "POST",
      path: "/Groups",
      bulkId: "g",
      data: { displayName: group, members: [{ value: "bulkId:n" }] },
    },
    { method: "DELETE", path: "/Groups/bulkId:g" },
    { method: "DELETE", path: "/Users/bulkId:n" },
  ];
  const start = (await trail()).length;
  const answer = operationsOf(
    await idp.post("/Bulk", bulkOf(ops("one@example.com", "One", "Frank F"))),
  );
  assertEquals(answer.map((o) => o.status), [
    "200",
    "200",
    "201",
    "201",
    "204",
    "204",
  ]);
  const byBulk = (await trail()).slice(start);

  // The same operations as single requests.
  const [put, patch, user, , deleteGroup, deleteUser] = ops(
    "two@example.com",
    "Two",
    "Frank G",
  );
  await idp.put(put.path!, put.data);
  await idp.patch(patch.path!, patch.data);
  const made = await idp.post("/Users", user.data);
  const group = await idp.post("/Groups", {
    displayName: "Two",
    members: [{ value: made.body.id }],
  });
  assertEquals(deleteGroup.method, "DELETE");
  await idp.delete(`/Groups/${group.body.id}`);
  assertEquals(deleteUser.method, "DELETE");
  await idp.delete(`/Users/${made.body.id}`);
  const bySingles = (await trail()).slice(start + byBulk.length);

  const actions = (rs: typeof byBulk) => rs.map((r) => r.action);
  assertEquals(actions(byBulk), actions(bySingles));
  assert(actions(byBulk).includes("user.created"));
  assert(actions(byBulk).includes("group.deleted"));
  for (const r of byBulk) {
    assertEquals(r.connection, { id: conn.id, name: "Okta" });
  }
});

Deno.test("a version is the operation's If-Match: a stale one answers 412, the current one applies", async () => {
  const { idp, userId } = await withFrank(await service());
  const current = (await idp.get(`/Users/${userId}`)).body.meta.version;
  const patch = (version: string) => ({
    method: "PATCH",
    path: `/Users/${userId}`,
    version,
    data: patchOp({ op: "replace", path: "displayName", value: version }),
  });
  const ops = operationsOf(
    await idp.post("/Bulk", bulkOf([patch('W/"u1.0"'), patch(current)])),
  );
  assertEquals(ops.map((o) => o.status), ["412", "200"]);
  assertEquals(
    ops[1].version,
    (await idp.get(`/Users/${userId}`)).body.meta.version,
  );
});

Deno.test("an operation that is no single request answers 400 invalidSyntax; a body that is no BulkRequest answers 400 for the whole", async () => {
  const { idp, userId } = await withFrank(await service());
  const ops = operationsOf(
    await idp.post(
      "/Bulk",
      bulkOf([
        { method: "GET", path: `/Users/${userId}` },
        { method: "POST", path: `/Users/${userId}`, data: {} },
        { method: "DELETE", path: "/Users" },
        { method: "PUT", path: "/Schemas/x", data: {} },
        "not an operation",
        { method: "delete", path: "/Groups/1", version: "\u00e9" },
        { method: "DELETE", path: "/Users/.." },
        // As its single request: an id that names nothing.
        { method: "DELETE", path: "/Users/%2e%2e" },
      ]),
    ),
  );
  assertEquals(ops.map((o) => failureOf(o).slice(0, 2)), [
    ...Array(7).fill(["400", "invalidSyntax"]),
    ["404", undefined],
  ]);
  for (const body of [{ Operations: "x" }, bulkOf([], 0), []]) {
    assertScimError(await idp.post("/Bulk", body), 400, "invalidSyntax");
  }
});

Deno.test("users created in a row keep every attribute they were sent, as a single POST's: name, title, the enterprise extension", async () => {
  const { idp } = await withFrank(await service());
  const ENTERPRISE =
    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
  const sent = (userName: string) => ({
    schemas: [USER_SCHEMA, ENTERPRISE],
    userName,
    name: { givenName: "Barbara", familyName: "Jensen" },
    title: "Tour Guide",
    [ENTERPRISE]: { employeeNumber: "701984", department: "Tours" },
  });
  const single = await idp.post("/Users", sent("single@example.com"));
  assertEquals(single.status, 201, JSON.stringify(single.body));
  const made = operationsOf(
    await idp.post(
      "/Bulk",
      bulkOf(["b1@example.com", "b2@example.com"].map((userName, i) => ({
        method: "POST",
        path: "/Users",
        bulkId: `b${i}`,
        data: sent(userName),
      }))),
    ),
  );
  assertEquals(made.map((o) => o.status), ["201", "201"]);
  const shown = (body: Record<string, unknown>) => ({
    name: body.name,
    title: body.title,
    enterprise: body[ENTERPRISE],
  });
  const expected = {
    name: { givenName: "Barbara", familyName: "Jensen" },
    title: "Tour Guide",
    enterprise: { employeeNumber: "701984", department: "Tours" },
  };
  assertEquals(shown(single.body), expected);
  for (const o of made) {
    const read = await idp.get(o.location.slice(o.location.indexOf("/Users")));
    assertEquals(read.status, 200);
    assertEquals(shown(read.body), expected);
  }
});
