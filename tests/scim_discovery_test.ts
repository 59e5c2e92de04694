/**
 * SCIM discovery (RFC 7644 4, RFC 7643 5-8) as a client and a conformance
 * checker read it: each schema and resource type at the URL its
 * `meta.location` gives, every reference with its `referenceTypes`, what
 * the service requires and what it sets itself declared as such, and a
 * `filter` refused where nothing is filtered.
 */
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  ENTERPRISE,
  GROUP_SCHEMA,
  LIST_SCHEMA,
  SCIM_MEDIA_TYPE,
  type ScimAnswer,
  scimClient,
  USER_SCHEMA,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

async function fresh() {
  const svc = await service();
  await clearScim(svc);
  return svc;
}

/** A discovery document: no token, as RFC 7644 4 has it. */
async function discover(svc: TestService, path: string): Promise<ScimAnswer> {
  const res = await svc.fetch(`/scim/v2${path}`);
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? JSON.parse(text) : undefined,
  };
}

interface Attribute {
  name: string;
  type: string;
  required: boolean;
  mutability: string;
  referenceTypes?: string[];
  canonicalValues?: string[];
  subAttributes?: Attribute[];
}

/** Every attribute of the schemas by its path (`User.emails.value`). */
async function attributes(svc: TestService) {
  const { body } = await discover(svc, "/Schemas");
  const all = new Map<string, Attribute>();
  const walk = (at: string, list: Attribute[]) => {
    for (const a of list) {
      all.set(`${at}.${a.name}`, a);
      walk(`${at}.${a.name}`, a.subAttributes ?? []);
    }
  };
  for (const schema of body.Resources) walk(schema.name, schema.attributes);
  return all;
}

/** The path of an absolute URL the service gave, to fetch it here. */
const pathOf = (url: string) =>
  new URL(url).pathname.replace(/^\/scim\/v2/, "");

Deno.test('RFC 7643 7: every reference attribute in /Schemas has referenceTypes, "a multi-valued array of JSON strings that indicate the SCIM resource types that may be referenced"', async () => {
  const svc = await fresh();
  const references = [...await attributes(svc)]
    .filter(([, a]) => a.type === "reference")
    .map(([path, a]) => [path, a.referenceTypes]);
  // RFC 7643 8.7.1's values, narrowed to what the service links: its
  // groups hold users only, and a user's groups are groups.
  assertEquals(Object.fromEntries(references), {
    "User.profileUrl": ["external"],
    "User.photos.value": ["external"],
    "User.groups.$ref": ["Group"],
    "EnterpriseUser.manager.$ref": ["User"],
    "Group.members.$ref": ["User"],
  });
});

Deno.test('RFC 7644 4: "Individual schema definitions can be returned by appending the schema URI to the /Schemas endpoint", at each schema\'s meta.location; an unknown one is 404', async () => {
  const svc = await fresh();
  const { body: list } = await discover(svc, "/Schemas");
  assertEquals(list.schemas, [LIST_SCHEMA]);
  assertEquals(
    list.Resources.map((s: { id: string }) => s.id),
    [USER_SCHEMA, ENTERPRISE, GROUP_SCHEMA],
  );
  for (const schema of list.Resources) {
    const one = await discover(svc, pathOf(schema.meta.location));
    assertEquals(one.status, 200, schema.id);
    assertEquals(one.headers.get("content-type"), SCIM_MEDIA_TYPE);
    assertEquals(one.body, schema);
  }
  // URIs compare without regard to case, as RFC 7643 2.1 has attribute names.
  const lower = await discover(svc, `/Schemas/${USER_SCHEMA.toLowerCase()}`);
  assertEquals(lower.body.id, USER_SCHEMA);
  // Some clients escape the colons.
  const escaped = `/Schemas/${encodeURIComponent(USER_SCHEMA)}`;
  assertEquals((await discover(svc, escaped)).body.id, USER_SCHEMA);
  for (
    const unknown of [
      "urn:ietf:params:scim:schemas:core:2.0:Device",
      "User",
      "urn%3Aietf",
    ]
  ) {
    const answer = await discover(svc, `/Schemas/${unknown}`);
    assertScimError(answer, 404);
    assertEquals(answer.body.detail, "Resource not found");
  }
  // Which schema comes before whether it could be filtered.
  assertScimError(await discover(svc, "/Schemas/User?filter=x"), 404);
});

Deno.test('RFC 7644 4: "In cases where a request is for a specific ResourceType or Schema, the single JSON object is returned in the same way that a single User or Group is retrieved"; an unknown one is 404', async () => {
  const svc = await fresh();
  const { body: list } = await discover(svc, "/ResourceTypes");
  assertEquals(list.Resources.map((t: { id: string }) => t.id), [
    "User",
    "Group",
  ]);
  for (const type of list.Resources) {
    const one = await discover(svc, pathOf(type.meta.location));
    assertEquals(one.status, 200, type.id);
    assertEquals(one.headers.get("content-type"), SCIM_MEDIA_TYPE);
    assertEquals(one.body, type);
  }
  assertEquals((await discover(svc, "/ResourceTypes/group")).body.id, "Group");
  for (const unknown of ["Device", "Users", USER_SCHEMA]) {
    const answer = await discover(svc, `/ResourceTypes/${unknown}`);
    assertScimError(answer, 404);
    assertEquals(answer.body.detail, "Resource not found");
  }
});

Deno.test('RFC 7643 7: "required: A Boolean value that specifies whether or not the attribute is required": /Schemas requires userName and emails with a value, as the service does; a userName that is an address still stands in', async () => {
  const svc = await fresh();
  const all = await attributes(svc);
  const required = [...all].filter(([, a]) => a.required).map(([p]) => p);
  assertEquals(required, [
    "User.userName",
    "User.emails",
    "User.emails.value",
    "Group.displayName",
  ]);
  const conn = await createConnection(svc);
  const idp = scimClient(svc, conn.token);
  // Without what /Schemas requires: refused, as declared.
  assertScimError(
    await idp.post("/Users", { schemas: [USER_SCHEMA], userName: "bjensen" }),
    400,
    "invalidValue",
  );
  // With it: created.
  const filled = await idp.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "bjensen",
    emails: [{ value: "bjensen@example.com" }],
  });
  assertEquals(filled.status, 201, JSON.stringify(filled.body));
  // An address as userName still stands in for a missing e-mail.
  const stood = await idp.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "jsmith@example.com",
  });
  assertEquals(stood.status, 201, JSON.stringify(stood.body));
  assertEquals(stood.body.emails, [{
    value: "jsmith@example.com",
    type: "work",
    primary: true,
  }]);
});

Deno.test("RFC 7643 7: \"readOnly: The attribute SHALL NOT be modified\": group members' display, type and $ref and a user's groups are declared as the service sets them, with the values it uses (RFC 7643 8.7.1's canonicalValues)", async () => {
  const svc = await fresh();
  const all = await attributes(svc);
  const declared = (path: string) => {
    const { mutability, canonicalValues } = all.get(path)!;
    return { mutability, ...canonicalValues && { canonicalValues } };
  };
  assertEquals(declared("Group.members"), { mutability: "readWrite" });
  assertEquals(declared("Group.members.value"), { mutability: "immutable" });
  assertEquals(declared("Group.members.display"), { mutability: "readOnly" });
  assertEquals(declared("Group.members.$ref"), { mutability: "readOnly" });
  assertEquals(declared("Group.members.type"), {
    mutability: "readOnly",
    canonicalValues: ["User"],
  });
  for (const sub of ["", ".value", ".display", ".$ref"]) {
    assertEquals(declared(`User.groups${sub}`), { mutability: "readOnly" });
  }
  assertEquals(declared("User.groups.type"), {
    mutability: "readOnly",
    canonicalValues: ["direct"],
  });
  // What a client sends for them is not kept: the service sets them.
  const conn = await createConnection(svc);
  const idp = scimClient(svc, conn.token);
  const user = await idp.post("/Users", {
    schemas: [USER_SCHEMA],
    userName: "mlee@example.com",
    displayName: "Mei Lee",
  });
  const group = await idp.post("/Groups", {
    schemas: [GROUP_SCHEMA],
    displayName: "Engineering",
    members: [{ value: user.body.id, display: "Someone", type: "Group" }],
  });
  assertEquals(group.status, 201, JSON.stringify(group.body));
  assertEquals(group.body.members[0].display, "mlee@example.com");
  assertEquals(group.body.members[0].type, "User");
});

Deno.test('RFC 7644 4: on /ServiceProviderConfig, /ResourceTypes and /Schemas "If a filter is provided, the service provider SHOULD respond with HTTP status code 403 (Forbidden)"; other query parameters "SHALL be ignored"', async () => {
  const svc = await fresh();
  const paths = [
    "/ServiceProviderConfig",
    "/ResourceTypes",
    "/ResourceTypes/User",
    "/Schemas",
    `/Schemas/${USER_SCHEMA}`,
  ];
  for (const path of paths) {
    const filter = encodeURIComponent('id eq "User"');
    const answer = await discover(svc, `${path}?filter=${filter}`);
    assertScimError(answer, 403);
    assertEquals(
      answer.body.detail,
      "Filtering is not supported on this endpoint",
    );
    const ignored = await discover(
      svc,
      `${path}?sortBy=id&sortOrder=descending&startIndex=2&count=1`,
    );
    assertEquals(ignored.status, 200);
    assertEquals(ignored.body, (await discover(svc, path)).body, path);
  }
  // The document declares it, so no operation lacks a client error.
  const doc = await (await svc.fetch("/openapi.json")).json();
  for (const path of paths) {
    const templated = path.replace(
      /\/(User|urn:.*)$/,
      (_, p: string) => p === "User" ? "/{name}" : "/{uri}",
    );
    const forbidden = doc.paths[`/scim/v2${templated}`].get.responses["403"];
    const examples = forbidden.content[SCIM_MEDIA_TYPE].examples;
    assertEquals(
      Object.values(examples).map((e) => (e as { value: unknown }).value),
      [{
        schemas: ["urn:ietf:params:scim:api:messages:2.0:Error"],
        status: "403",
        detail: "Filtering is not supported on this endpoint",
      }],
      templated,
    );
  }
});

Deno.test("RFC 7643 5: /ServiceProviderConfig says what is built (bulk with its limits, pages by index and by cursor) and points to documentation the service serves", async () => {
  const svc = await fresh();
  const { body: config } = await discover(svc, "/ServiceProviderConfig");
  assertEquals(config.bulk, {
    supported: true,
    maxOperations: 1000,
    maxPayloadSize: 4194304,
  });
  assertEquals(
    [config.pagination.index, config.pagination.cursor],
    [true, true],
  );
  const docs = new URL(config.documentationUri);
  assertEquals(docs.pathname, "/docs");
  const page = await svc.fetch(docs.pathname);
  assertEquals(page.status, 200);
  await page.body?.cancel();
});
