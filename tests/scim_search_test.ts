/**
 * Queries at the root, `POST /scim/v2/.search` (RFC 7644 3.4.3): "the
 * search SHALL be applied to all resources" the client may read, users and
 * the connection's groups together, each result with its `schemas` and
 * `meta.resourceType`; filter, attributes and paging as `POST
 * /Users/.search` takes them; and `POST /Groups/.search` beside it.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  scimClient,
  USER_SCHEMA,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

const SEARCH = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

/** A connection with two users and two groups (one of Ops, holding ada). */
async function withBoth() {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const user = async (userName: string, displayName: string) =>
    (await idp.post("/Users", { userName, displayName })).body.id as string;
  const ada = await user("ada@example.com", "Ops Lead");
  const bob = await user("bob@example.com", "Bob");
  const group = async (displayName: string, members: string[]) =>
    (await idp.post("/Groups", {
      displayName,
      members: members.map((value) => ({ value })),
    })).body.id as string;
  const ops = await group("Ops", [ada]);
  const sales = await group("Sales", []);
  const search = (body: Record<string, unknown>) =>
    idp.post("/.search", { schemas: [SEARCH], ...body });
  return { svc, idp, ada, bob, ops, sales, search };
}

const kinds = (
  resources: { id: string; meta: { resourceType: string } }[],
) => resources.map((r) => `${r.meta.resourceType} ${r.id}`);

Deno.test("POST /scim/v2/.search answers the users and then the connection's groups, each with its schemas and meta.resourceType", async () => {
  const { svc, ada, bob, ops, sales, search } = await withBoth();
  const admin = String(
    (await svc.admin.GET("/api/auth/me")).data!.id,
  );
  const all = await search({});
  assertEquals(all.status, 200);
  assertEquals(all.body.schemas, [LIST_SCHEMA]);
  assertEquals(all.body.totalResults, 5);
  assertEquals(all.body.startIndex, 1);
  assertEquals(all.body.itemsPerPage, 5);
  assertEquals(kinds(all.body.Resources), [
    `User ${admin}`,
    `User ${ada}`,
    `User ${bob}`,
    `Group ${ops}`,
    `Group ${sales}`,
  ]);
  for (const r of all.body.Resources) {
    assertEquals(
      r.schemas[0],
      r.meta.resourceType === "User" ? USER_SCHEMA : GROUP_SCHEMA,
    );
  }
  assertEquals(all.body.Resources[3].members[0].value, ada);
});

Deno.test("a filter at the root may name either type's attributes: one a type lacks matches none of its resources", async () => {
  const { ada, ops, sales, search } = await withBoth();
  const found = async (filter: string) => {
    const answer = await search({ filter });
    assertEquals(answer.status, 200, JSON.stringify(answer.body));
    return kinds(answer.body.Resources ?? []);
  };
  assertEquals(await found('displayName sw "ops"'), [
    `User ${ada}`,
    `Group ${ops}`,
  ]);
  assertEquals(await found('userName eq "ADA@example.com"'), [`User ${ada}`]);
  assertEquals(await found(`members.value eq "${ada}"`), [`Group ${ops}`]);
  assertEquals(
    await found(`userName eq "ada@example.com" or members[value eq "${ada}"]`),
    [`User ${ada}`, `Group ${ops}`],
  );
  // No group has a userName: every group is "not" one with it.
  assertEquals(await found("not (userName pr)"), [
    `Group ${ops}`,
    `Group ${sales}`,
  ]);
  for (const filter of ['title eq "x"', "nothing pr", 'userName eq "x" or']) {
    assertScimError(await search({ filter }), 400, "invalidFilter");
  }
});

Deno.test("attributes, excludedAttributes and startIndex paging at the root: meta.resourceType stays, pages pass from users to groups", async () => {
  const { bob, ops, sales, search } = await withBoth();
  const only = await search({ attributes: ["displayName"] });
  for (const r of only.body.Resources) {
    assertEquals(Object.keys(r).sort(), [
      "displayName",
      "id",
      "meta",
      "schemas",
    ]);
    assertEquals(Object.keys(r.meta), ["resourceType"]);
  }
  const without = await search({ excludedAttributes: ["meta", "members"] });
  assert(
    without.body.Resources.every((r: { meta: unknown }) =>
      Object.keys(r.meta as object).join() === "resourceType"
    ),
  );
  assertEquals(without.body.Resources[3].members, undefined);
  const across = await search({ startIndex: 3, count: 2 });
  assertEquals(across.body.totalResults, 5);
  assertEquals(across.body.startIndex, 3);
  assertEquals(kinds(across.body.Resources), [`User ${bob}`, `Group ${ops}`]);
  const last = await search({ startIndex: 5, count: 2 });
  assertEquals(kinds(last.body.Resources), [`Group ${sales}`]);
  const total = await search({ count: 0 });
  assertEquals(total.body, {
    schemas: [LIST_SCHEMA],
    totalResults: 5,
    startIndex: 1,
    itemsPerPage: 0,
  });
  const sorted = await search({
    sortBy: "meta.created",
    sortOrder: "descending",
    count: 2,
    filter: 'displayName pr and not (displayName eq "Ops Lead")',
  });
  assertEquals(kinds(sorted.body.Resources).length, 2);
  assertEquals(sorted.body.Resources[0].meta.resourceType, "User");
  assertScimError(await search({ count: "ten" }), 400, "invalidValue");
});

Deno.test("POST /scim/v2/Groups/.search takes a SearchRequest as GET /Groups takes its query", async () => {
  const { idp, ops } = await withBoth();
  const found = await idp.post("/Groups/.search", {
    schemas: [SEARCH],
    filter: 'displayName eq "ops"',
    attributes: ["displayName"],
  });
  assertEquals(found.status, 200);
  assertEquals(found.body.Resources, [{
    schemas: [GROUP_SCHEMA],
    id: ops,
    displayName: "Ops",
  }]);
  assertScimError(
    await idp.post("/Groups/.search", { filter: 'userName eq "x"' }),
    400,
    "invalidFilter",
  );
});

Deno.test("the root search and the groups' search are in the OpenAPI document under the tag SCIM, with the connection's token", async () => {
  const svc = await service();
  const doc = await (await svc.fetch("/openapi.json")).json();
  for (const path of ["/scim/v2/.search", "/scim/v2/Groups/.search"]) {
    const op = doc.paths[path]?.post;
    assert(op, `${path} is declared`);
    assertEquals(op.tags, ["SCIM"]);
    assertEquals(op.security, [{ scimAuth: [] }]);
  }
  const unauthorised = await svc.fetch("/scim/v2/.search", {
    method: "POST",
    body: "{}",
  });
  assertEquals(unauthorised.status, 401);
  await unauthorised.body?.cancel();
});
