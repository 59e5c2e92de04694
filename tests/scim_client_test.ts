/**
 * A SCIM library written by others, SCIMMY (npm `scimmy`), as a client of
 * the running service: it reads /ServiceProviderConfig, /ResourceTypes and
 * /Schemas, builds its schema definitions from those documents alone (its
 * own constructors refuse a malformed definition), checks every body it
 * sends and every resource it gets against them (a reference without
 * `referenceTypes`, a required attribute missing, a value of the wrong
 * type or outside its canonical values fail), and round-trips a user and
 * a group: created from bodies it checked, read back, and changed by a
 * PatchOp it also applies itself, whose outcome the service must match.
 */
import SCIMMY from "scimmy";
import { assertEquals, assertRejects } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  ENTERPRISE,
  GROUP_SCHEMA,
  patchOp,
  scimClient,
  USER_SCHEMA,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4 });

type Json = Record<string, unknown>;

/** An attribute of a discovered schema, as RFC 7643 7 describes one. */
interface Described {
  name: string;
  type: SCIMMY.Types.Attribute.ValidAttributeTypes;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact?: boolean;
  canonicalValues?: string[];
  referenceTypes?: string[];
  mutability: string;
  returned: string;
  uniqueness?: string;
  subAttributes?: Described[];
}

/** SCIMMY's attribute for a described one (its constructor checks the description). */
const attributeOf = (a: Described): SCIMMY.Types.Attribute =>
  new SCIMMY.Types.Attribute(a.type, a.name, {
    multiValued: a.multiValued,
    description: a.description,
    required: a.required,
    caseExact: a.caseExact,
    canonicalValues: a.canonicalValues ?? false,
    referenceTypes: a.referenceTypes ?? false,
    // SCIMMY spells readWrite and readOnly as booleans.
    mutable: a.mutability === "readWrite" ||
      (a.mutability !== "readOnly" && a.mutability),
    returned: a.returned,
    uniqueness: a.uniqueness,
  }, (a.subAttributes ?? []).map(attributeOf));

/** id, externalId and meta: SCIMMY declares them on every schema itself (RFC 7643 3.1). */
const COMMON = new Set(["id", "externalId", "meta"]);

/** A resource type as the client knows it from discovery alone. */
interface Discovered {
  endpoint: string;
  /** Resources of this type, checked against the discovered schemas. */
  Resource: new (data: Json, direction?: string) => SCIMMY.Types.Schema;
  /** Its attributes as described, the extensions' under their URNs. */
  described: Map<string, Described[]>;
}

/** What SCIMMY reads from the three discovery endpoints of the running service. */
async function discover(svc: TestService) {
  const get = async (path: string): Promise<Json> => {
    const res = await svc.fetch(path);
    assertEquals(res.status, 200, path);
    return await res.json();
  };
  const at = (location: unknown) => get(new URL(String(location)).pathname);
  /** The resources of a ListResponse, read by SCIMMY's ListResponse. */
  const list = async (path: string) =>
    new SCIMMY.Messages.ListResponse(await get(path) as never)
      .Resources as unknown as Json[];
  const config = new SCIMMY.Schemas.ServiceProviderConfig(
    await get("/scim/v2/ServiceProviderConfig"),
  );
  const definitions = new Map<string, SCIMMY.Types.SchemaDefinition>();
  const described = new Map<string, Described[]>();
  for (const schema of await list("/scim/v2/Schemas")) {
    // Each at its meta.location too (RFC 7644 4), the same document.
    assertEquals(await at((schema.meta as Json).location), schema);
    const attributes = schema.attributes as Described[];
    described.set(String(schema.id), attributes);
    definitions.set(
      String(schema.id),
      new SCIMMY.Types.SchemaDefinition(
        String(schema.name),
        String(schema.id),
        String(schema.description),
        attributes.filter((a) => !COMMON.has(a.name)).map(attributeOf),
      ),
    );
  }
  const resourceTypes: Record<string, Discovered> = {};
  for (const type of await list("/scim/v2/ResourceTypes")) {
    assertEquals(await at((type.meta as Json).location), type);
    const checked = new SCIMMY.Schemas.ResourceType(type);
    const definition = definitions.get(checked.schema)!;
    const own = new Map([[checked.schema, described.get(checked.schema)!]]);
    for (const { schema, required } of checked.schemaExtensions ?? []) {
      definition.extend(definitions.get(schema)!, required);
      own.set(schema, described.get(schema)!);
    }
    resourceTypes[checked.name] = {
      endpoint: checked.endpoint,
      Resource: class extends SCIMMY.Types.Schema {
        static override get id() {
          return definition.id;
        }
        static override get definition() {
          return definition;
        }
        constructor(data: Json, direction = "both") {
          super(data, direction);
          Object.assign(this, definition.coerce(data, direction));
        }
      },
      described: own,
    };
  }
  return { config, resourceTypes };
}

/** A resource as JSON, through SCIMMY's own serialisation. */
const json = (resource: SCIMMY.Types.Schema): Json =>
  JSON.parse(JSON.stringify(resource));

/**
 * What a client writes of a resource: without `meta`, `id`, and what the
 * discovered schemas say the service sets itself (`readOnly`).
 */
function written(type: Discovered, resource: Json): Json {
  const strip = (value: unknown, defs: Described[]): unknown => {
    if (Array.isArray(value)) return value.map((v) => strip(v, defs));
    if (typeof value !== "object" || value === null) return value;
    const out: Json = {};
    for (const [key, v] of Object.entries(value)) {
      const def = defs.find((d) => d.name.toLowerCase() === key.toLowerCase());
      if (def?.mutability === "readOnly") continue;
      out[key] = def?.subAttributes ? strip(v, def.subAttributes) : v;
    }
    return out;
  };
  const { meta: _, id: __, ...rest } = resource;
  const out: Json = {};
  for (const [key, value] of Object.entries(rest)) {
    const extension = type.described.get(key);
    out[key] = extension && key !== "schemas" ? strip(value, extension) : value;
  }
  const [core] = type.described.values();
  return strip(out, core) as Json;
}

Deno.test("SCIMMY discovers the service from /ServiceProviderConfig, /ResourceTypes and /Schemas, each document and each definition accepted by its own checks", async () => {
  const svc = await service();
  const { config, resourceTypes } = await discover(svc);
  assertEquals(config.patch.supported, true);
  assertEquals(config.bulk.supported, true);
  assertEquals(config.filter, { supported: true, maxResults: 1000 });
  assertEquals(Object.keys(resourceTypes), ["User", "Group"]);
  assertEquals(resourceTypes.User.endpoint, "/Users");
  assertEquals([...resourceTypes.User.described.keys()], [
    USER_SCHEMA,
    ENTERPRISE,
  ]);
  assertEquals(resourceTypes.Group.endpoint, "/Groups");
});

Deno.test("SCIMMY round-trips a user and a group: bodies it checked against the discovered schemas are created, read back as valid resources, and PATCHed as it applies the PatchOp itself", async () => {
  const svc = await service();
  await clearScim(svc);
  const { resourceTypes: { User, Group } } = await discover(svc);
  const conn = await createConnection(svc, "SCIMMY");
  const idp = scimClient(svc, conn.token);

  // What the schemas require is what the service requires: a body SCIMMY
  // finds incomplete is one the service refuses.
  const bare = { schemas: [USER_SCHEMA], userName: "bjensen" };
  await assertRejects(
    () => Promise.resolve().then(() => new User.Resource(bare, "in")),
    TypeError,
    "Required attribute 'emails' is missing",
  );
  assertScimError(await idp.post(User.endpoint, bare), 400, "invalidValue");

  // A user with every kind of reference the schemas describe.
  const manager = svc.adminAccount.id;
  const body = json(
    new User.Resource({
      schemas: [USER_SCHEMA, ENTERPRISE],
      userName: "bjensen",
      name: { givenName: "Barbara", familyName: "Jensen" },
      displayName: "Babs Jensen",
      profileUrl: "https://login.example.com/bjensen",
      emails: [{ value: "bjensen@example.com", type: "work", primary: true }],
      photos: [{ value: "https://photos.example.com/bjensen.jpg" }],
      title: "Tour Guide",
      [ENTERPRISE]: {
        employeeNumber: "701984",
        manager: {
          value: String(manager),
          $ref: `https://users.example.com/scim/v2/Users/${manager}`,
        },
      },
    }, "in"),
  );
  const created = await idp.post(User.endpoint, body);
  assertEquals(created.status, 201, JSON.stringify(created.body));
  const user = json(new User.Resource(created.body, "out"));
  // What it sent comes back, and the user is active (it said nothing).
  assertEquals(written(User, user), { ...written(User, body), active: true });

  // A group of that user: the user reads it back with a reference to it.
  const groupBody = json(
    new Group.Resource({
      schemas: [GROUP_SCHEMA],
      displayName: "Tour Guides",
      members: [{ value: user.id }],
    }, "in"),
  );
  const createdGroup = await idp.post(Group.endpoint, groupBody);
  assertEquals(createdGroup.status, 201, JSON.stringify(createdGroup.body));
  const group = json(new Group.Resource(createdGroup.body, "out"));
  assertEquals(written(Group, group), written(Group, groupBody));
  const read = await idp.get(`${User.endpoint}/${user.id}`);
  const member = json(new User.Resource(read.body, "out"));
  assertEquals(member.groups, [{
    value: group.id,
    display: "Tour Guides",
    type: "direct",
    $ref: createdGroup.body.meta.location,
  }]);

  // PATCH: SCIMMY applies the operations to what it read; the service's
  // answer is the same resource.
  const userPatch = new SCIMMY.Messages.PatchOp(
    patchOp(
      { op: "replace", path: "displayName", value: "Barbara Jensen" },
      { op: "replace", path: "name.givenName", value: "Barb" },
      {
        op: "add",
        path: "phoneNumbers",
        value: [{ value: "+1 555 0100", type: "work" }],
      },
      { op: "replace", path: `${ENTERPRISE}:department`, value: "Tours" },
    ) as ConstructorParameters<typeof SCIMMY.Messages.PatchOp>[0],
  );
  const expected = await userPatch.apply(new User.Resource(member));
  const patched = await idp.patch(`${User.endpoint}/${user.id}`, userPatch);
  assertEquals(patched.status, 200, JSON.stringify(patched.body));
  assertEquals(patched.body.displayName, "Barbara Jensen");
  assertEquals(
    written(User, json(new User.Resource(patched.body, "out"))),
    written(User, json(expected)),
  );

  const second = await idp.post(
    User.endpoint,
    json(
      new User.Resource({
        schemas: [USER_SCHEMA],
        userName: "jsmith",
        emails: [{ value: "jsmith@example.com" }],
      }, "in"),
    ),
  );
  assertEquals(second.status, 201, JSON.stringify(second.body));
  const groupPatch = new SCIMMY.Messages.PatchOp(
    patchOp(
      { op: "add", path: "members", value: [{ value: second.body.id }] },
      { op: "remove", path: `members[value eq "${user.id}"]` },
      { op: "replace", path: "displayName", value: "Guides" },
    ) as ConstructorParameters<typeof SCIMMY.Messages.PatchOp>[0],
  );
  const expectedGroup = await groupPatch.apply(new Group.Resource(group));
  const patchedGroup = await idp.patch(
    `${Group.endpoint}/${group.id}`,
    groupPatch,
  );
  assertEquals(patchedGroup.status, 200, JSON.stringify(patchedGroup.body));
  assertEquals(
    patchedGroup.body.members.map((m: Json) => m.value),
    [second.body.id],
  );
  assertEquals(
    written(Group, json(new Group.Resource(patchedGroup.body, "out"))),
    written(Group, json(expectedGroup)),
  );
});
