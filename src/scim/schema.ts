/**
 * The SCIM schemas the service speaks (RFC 7643): the core User with the
 * enterprise extension, and the core Group. One table of attributes serves
 * reading bodies (which attributes are known, of which type), PATCH paths
 * (which name something) and the discovery documents (`/Schemas`).
 */

import { DOCS_PATH } from "../http/docs.ts";
import { CURSOR_TIMEOUT_SECONDS } from "./cursor.ts";
import { COUNT_DEFAULT, COUNT_MAX } from "./list-query.ts";
import { BULK_MAX_OPERATIONS, BULK_MAX_PAYLOAD_BYTES } from "./bulk.ts";

export const USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User";
export const GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const ENTERPRISE_SCHEMA =
  "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
export const LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
export const PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const SEARCH_SCHEMA =
  "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

export type AttrType = "string" | "boolean" | "complex" | "reference";

interface AttrBase {
  /** The attribute's name as the schema spells it. */
  name: string;
  multi?: boolean;
  /** Sub-attributes of a complex attribute. */
  subs?: AttrDef[];
  mutability?: "readOnly" | "readWrite" | "writeOnly" | "immutable";
  /** Compared without regard to case (strings). */
  caseExact?: boolean;
  required?: boolean;
  uniqueness?: "none" | "server";
  /** The values the service itself gives it (RFC 7643 7). */
  canonicalValues?: string[];
  description?: string;
}

/**
 * An attribute's definition. A reference always says what it may point to
 * (`referenceTypes`, RFC 7643 7): resource types, `external` or `uri`;
 * clients read it to resolve and check the value.
 */
export type AttrDef =
  & AttrBase
  & (
    | { type: Exclude<AttrType, "reference">; referenceTypes?: never }
    | { type: "reference"; referenceTypes: [string, ...string[]] }
  );

const str = (name: string, extra: Partial<AttrBase> = {}): AttrDef => ({
  name,
  type: "string",
  ...extra,
});

const ref = (
  name: string,
  referenceTypes: [string, ...string[]],
  extra: Partial<AttrBase> = {},
): AttrDef => ({ name, type: "reference", referenceTypes, ...extra });

const READ_ONLY = { mutability: "readOnly" } as const;

/**
 * value, display, type, primary: the sub-attributes of most multi-valued
 * attributes (`value` a string unless given).
 */
const multiValued = (
  name: string,
  { value = str("value"), ...extra }: Partial<AttrBase> & { value?: AttrDef } =
    {},
): AttrDef => ({
  name,
  type: "complex",
  multi: true,
  subs: [
    value,
    str("display"),
    str("type"),
    { name: "primary", type: "boolean" },
  ],
  ...extra,
});

export const USER_ATTRIBUTES: AttrDef[] = [
  str("userName", {
    required: true,
    uniqueness: "server",
    description:
      "The username: canonical and confusable uniqueness as for every user; at most 64 characters, as every door allows",
  }),
  {
    name: "name",
    type: "complex",
    subs: [
      str("formatted"),
      str("familyName"),
      str("givenName"),
      str("middleName"),
      str("honorificPrefix"),
      str("honorificSuffix"),
    ],
  },
  str("displayName"),
  str("nickName"),
  ref("profileUrl", ["external"]),
  str("title"),
  str("userType"),
  str("preferredLanguage"),
  str("locale"),
  str("timezone"),
  { name: "active", type: "boolean" },
  str("password", { mutability: "writeOnly" }),
  // Every account has an e-mail: a client that fills what is required
  // sends one. (A userName that is an address still stands in for it.)
  multiValued("emails", {
    required: true,
    value: str("value", { required: true }),
    description:
      "The e-mail is the primary one, else the first; without any, a userName that is an address",
  }),
  multiValued("phoneNumbers"),
  multiValued("ims"),
  multiValued("photos", { value: ref("value", ["external"]) }),
  {
    name: "addresses",
    type: "complex",
    multi: true,
    subs: [
      str("formatted"),
      str("streetAddress"),
      str("locality"),
      str("region"),
      str("postalCode"),
      str("country"),
      str("type"),
      { name: "primary", type: "boolean" },
    ],
  },
  {
    name: "groups",
    type: "complex",
    multi: true,
    ...READ_ONLY,
    description:
      "The connection's groups the user is a member of: changed through the groups' members",
    subs: [
      str("value", READ_ONLY),
      ref("$ref", ["Group"], READ_ONLY),
      str("display", READ_ONLY),
      str("type", { ...READ_ONLY, canonicalValues: ["direct"] }),
    ],
  },
  multiValued("entitlements"),
  multiValued("roles"),
  multiValued("x509Certificates"),
];

export const ENTERPRISE_ATTRIBUTES: AttrDef[] = [
  str("employeeNumber"),
  str("costCenter"),
  str("organization"),
  str("division"),
  str("department"),
  {
    name: "manager",
    type: "complex",
    subs: [
      str("value"),
      ref("$ref", ["User"]),
      str("displayName"),
    ],
  },
];

export const GROUP_ATTRIBUTES: AttrDef[] = [
  str("displayName", { required: true }),
  {
    name: "members",
    type: "complex",
    multi: true,
    description: "Users, by their ids (`value`)",
    // Members are users: the service fills in their name, type and URL.
    subs: [
      str("value", { mutability: "immutable" }),
      str("display", READ_ONLY),
      ref("$ref", ["User"], READ_ONLY),
      str("type", { ...READ_ONLY, canonicalValues: ["User"] }),
    ],
  },
];

/** Attributes every resource has (RFC 7643 3.1), managed by the service. */
export const COMMON_READ_ONLY = new Set(["id", "meta"]);

/** A definition by name, without regard to case. */
export const findAttr = (defs: AttrDef[], name: string) => {
  const lower = name.toLowerCase();
  return defs.find((d) => d.name.toLowerCase() === lower);
};

// The discovery documents (RFC 7643 5-7; RFC 7644 4).

const schemaAttribute = (d: AttrDef): Record<string, unknown> => ({
  name: d.name,
  type: d.type,
  multiValued: d.multi ?? false,
  description: d.description ?? d.name,
  required: d.required ?? false,
  ...(d.type === "string" || d.type === "reference") &&
    { caseExact: d.caseExact ?? false },
  ...d.referenceTypes && { referenceTypes: d.referenceTypes },
  ...d.canonicalValues && { canonicalValues: d.canonicalValues },
  mutability: d.mutability ?? "readWrite",
  returned: d.mutability === "writeOnly" ? "never" : "default",
  uniqueness: d.uniqueness ?? "none",
  ...(d.subs && { subAttributes: d.subs.map(schemaAttribute) }),
});

const schemaDoc = (
  id: string,
  name: string,
  description: string,
  attributes: AttrDef[],
  base: string,
) => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
  id,
  name,
  description,
  attributes: attributes.map(schemaAttribute),
  meta: { resourceType: "Schema", location: `${base}/Schemas/${id}` },
});

export const schemaDocs = (base: string) => [
  schemaDoc(USER_SCHEMA, "User", "User Account", [
    { ...str("externalId"), caseExact: true },
    ...USER_ATTRIBUTES,
  ], base),
  schemaDoc(
    ENTERPRISE_SCHEMA,
    "EnterpriseUser",
    "Enterprise User",
    ENTERPRISE_ATTRIBUTES,
    base,
  ),
  schemaDoc(GROUP_SCHEMA, "Group", "Group", [
    { ...str("externalId"), caseExact: true },
    ...GROUP_ATTRIBUTES,
  ], base),
];

/** A schema's id as the service spells it, for a URI in any case; undefined: none. */
export const schemaOf = (uri: string) =>
  [USER_SCHEMA, ENTERPRISE_SCHEMA, GROUP_SCHEMA].find((id) =>
    id.toLowerCase() === uri.toLowerCase()
  );

/** A resource type's name as the service spells it, for a name in any case. */
export const resourceTypeOf = (name: string) =>
  ["User", "Group"].find((id) => id.toLowerCase() === name.toLowerCase());

export const resourceTypeDocs = (base: string) => [
  {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
    id: "User",
    name: "User",
    endpoint: "/Users",
    description: "User Account",
    schema: USER_SCHEMA,
    schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
    meta: {
      resourceType: "ResourceType",
      location: `${base}/ResourceTypes/User`,
    },
  },
  {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
    id: "Group",
    name: "Group",
    endpoint: "/Groups",
    description: "Group",
    schema: GROUP_SCHEMA,
    schemaExtensions: [],
    meta: {
      resourceType: "ResourceType",
      location: `${base}/ResourceTypes/Group`,
    },
  },
];

export const serviceProviderConfig = (base: string) => ({
  schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
  documentationUri: new URL(`${DOCS_PATH}#/SCIM`, base).href,
  patch: { supported: true },
  bulk: {
    supported: true,
    maxOperations: BULK_MAX_OPERATIONS,
    maxPayloadSize: BULK_MAX_PAYLOAD_BYTES,
  },
  filter: { supported: true, maxResults: 1000 },
  // RFC 9865: pages by cursor as well as by startIndex.
  pagination: {
    cursor: true,
    index: true,
    defaultPaginationMethod: "index",
    defaultPageSize: COUNT_DEFAULT,
    maxPageSize: COUNT_MAX,
    cursorTimeout: CURSOR_TIMEOUT_SECONDS,
  },
  changePassword: { supported: true },
  sort: { supported: true },
  etag: { supported: true },
  authenticationSchemes: [{
    type: "oauthbearertoken",
    name: "Bearer token",
    description:
      "The provisioning connection's token (`usc_...`), as `Authorization: Bearer usc_...`",
    primary: true,
  }],
  meta: {
    resourceType: "ServiceProviderConfig",
    location: `${base}/ServiceProviderConfig`,
  },
});
