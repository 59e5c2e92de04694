/**
 * `/scim/v2` (RFC 7643/7644): Users and Groups with the connection's
 * bearer token (discovery, without one, is in discovery.routes.ts; the
 * lists and searches in lists.routes.ts). Every check answers a SCIM error
 * (errors.ts); the steps are in steps.ts.
 */
import { z } from "@hono/zod-openapi";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import { failure, textHeader } from "../http/openapi.ts";
import { outcome, passes, pathParam } from "../http/steps.ts";
import { parseUserId } from "../users/user.ts";
import { scimCheck } from "./errors.ts";
import {
  invalidFilter,
  invalidSyntax,
  invalidValue,
  managedElsewhere,
  noSuchId,
  notFound,
  preconditionFailed,
  scimBody,
  scimIfMatch,
  scimJson,
  scimRoute,
  uniqueness,
} from "./steps.ts";

const ETAG = { ETag: textHeader("The resource's version (`meta.version`)") };
const LOCATION = {
  ETag: ETAG.ETag,
  Location: textHeader("The new resource's URL"),
};

const invalidPath = scimCheck(
  400,
  MSG.scimInvalidPath,
  "a PATCH path names no attribute of the schemas (or is malformed)",
);
const noTarget = scimCheck(
  400,
  MSG.scimNoTarget,
  "a PATCH `remove` has no path",
);
const mutability = scimCheck(
  400,
  MSG.scimMutability,
  "a PATCH path names a read-only attribute (`id`, `meta`, `groups`)",
);

/** The refusals a POST or PUT may answer, as outcomes (the detail says which). */
const writeFaults = [
  outcome("invalidSyntax", invalidSyntax),
  outcome("invalidValue", invalidValue),
  outcome("duplicate", uniqueness),
] as const;

/** A group's write: its members are checked before the users concerned. */
const groupFaults = (faults: typeof writeFaults | typeof patchFaults) =>
  [
    ...faults.slice(0, -1),
    outcome("managed_elsewhere", managedElsewhere),
    outcome("duplicate", uniqueness),
  ] as const;

/** A PATCH's: its paths' too. */
const patchFaults = [
  outcome("invalidSyntax", invalidSyntax),
  outcome("invalidValue", invalidValue),
  outcome("invalidPath", invalidPath),
  outcome("invalidFilter", invalidFilter),
  outcome("noTarget", noTarget),
  outcome("mutability", mutability),
  outcome("duplicate", uniqueness),
] as const;

const id = pathParam("id", parseUserId, noSuchId);

/** The id of a user or group in the path, as the document declares it. */
const IdParam = z.object({ id: idParam("id", 12) });

/** `attributes` and `excludedAttributes` of a read or write (RFC 7644 3.9). */
const projection = passes<
  "projection",
  { attributes?: string[]; excluded?: string[] }
>("projection", [], (c) => {
  const split = (v: string | undefined) =>
    v?.split(",").map((s) => s.trim()).filter(Boolean);
  return {
    attributes: split(c.req.query("attributes")),
    excluded: split(c.req.query("excludedAttributes")),
  };
});

const failed = failure(MSG.scimFailed);

export const getUser = scimRoute({
  operationId: "scimGetUser",
  method: "get",
  path: "/scim/v2/Users/{id}",
  request: { params: IdParam },
  summary: "SCIM: get a user",
  description:
    "The user as this connection sees it: its externalId and the attributes it wrote, beside what the service keeps, and `groups`, the connection's groups the user is a member of (read-only). `meta.version` and `ETag` are the user's ETag (the one `GET /api/users/{id}` gives).",
  responses: { 200: scimJson("The user", ETAG) },
  steps: [id, projection, outcome("not_found", notFound), failed],
});

export const createUser = scimRoute({
  operationId: "scimCreateUser",
  method: "post",
  path: "/scim/v2/Users",
  summary: "SCIM: create a user",
  description:
    "A viewer (until group membership says otherwise). `userName` is the username (at most 64 characters, as every door allows), the name is `name.formatted`, else `displayName`, else given and family name, else `userName`; the e-mail the primary of `emails`, else the first, else `userName` when it is an address. " +
    "`active: false` creates the user disabled. Without `password` the user cannot log in with a password until an admin sets one. Other attributes of the User and enterprise schemas are kept (at most 16 KiB) and returned; attributes no schema defines are ignored.",
  responses: { 201: scimJson("Created", LOCATION) },
  steps: [scimBody, projection, ...writeFaults, failed],
});

export const replaceUser = scimRoute({
  operationId: "scimReplaceUser",
  method: "put",
  path: "/scim/v2/Users/{id}",
  request: { params: IdParam },
  summary: "SCIM: replace a user",
  description:
    "Replaces what this connection wrote of the user. Without `password` the password stays; without `active` the user stays enabled or disabled as they are.",
  responses: { 200: scimJson("The user after the change", ETAG) },
  steps: [
    id,
    scimBody,
    scimIfMatch,
    projection,
    outcome("not_found", notFound),
    outcome("managed_elsewhere", managedElsewhere),
    outcome("precondition_failed", preconditionFailed),
    ...writeFaults,
    failed,
  ],
});

export const patchUser = scimRoute({
  operationId: "scimPatchUser",
  method: "patch",
  path: "/scim/v2/Users/{id}",
  request: { params: IdParam },
  summary: "SCIM: change a user (PATCH)",
  description:
    'RFC 7644 3.5.2, all operations or none. Takes what Okta and Entra send: operation names in any case, `replace`/`add` without `path` and an object value, value-path filters (`emails[type eq "work"].value`), `"True"`/`"False"` for `active`, `remove` of a missing value as a no-op, `add`/`replace` on a missing filtered value as its creation. `active: false` disables the user (`Deprovisioned by <connection>`: sessions end, keys are suspended).',
  responses: { 200: scimJson("The user after the change", ETAG) },
  steps: [
    id,
    scimBody,
    scimIfMatch,
    projection,
    outcome("not_found", notFound),
    outcome("managed_elsewhere", managedElsewhere),
    outcome("precondition_failed", preconditionFailed),
    ...patchFaults,
    failed,
  ],
});

export const deleteUser = scimRoute({
  operationId: "scimDeleteUser",
  method: "delete",
  path: "/scim/v2/Users/{id}",
  request: { params: IdParam },
  summary: "SCIM: delete a user",
  description:
    "Deletes the user (as `DELETE /api/users/{id}` does: sessions end, keys go, they leave every group).",
  responses: { 204: { description: "Deleted" } },
  steps: [
    id,
    scimIfMatch,
    outcome("not_found", notFound),
    outcome("managed_elsewhere", managedElsewhere),
    outcome("precondition_failed", preconditionFailed),
    failed,
  ],
});

export const getGroup = scimRoute({
  operationId: "scimGetGroup",
  method: "get",
  path: "/scim/v2/Groups/{id}",
  request: { params: IdParam },
  summary: "SCIM: get a group",
  description: "One of this connection's groups, with its members.",
  responses: { 200: scimJson("The group", ETAG) },
  steps: [id, projection, outcome("not_found", notFound), failed],
});

export const createGroup = scimRoute({
  operationId: "scimCreateGroup",
  method: "post",
  path: "/scim/v2/Groups",
  summary: "SCIM: create a group",
  description:
    "`displayName` (not unique), `externalId` (unique in the connection), `members` (users' ids). The connection's own users among the members of a group its `adminGroups` names are admins, of its other groups viewers; a viewer no other connection owns becomes its own. A member read-only to it (another connection's, or an admin it did not make) is refused when the group would change their role.",
  responses: { 201: scimJson("Created", LOCATION) },
  steps: [scimBody, projection, ...groupFaults(writeFaults), failed],
});

export const replaceGroup = scimRoute({
  operationId: "scimReplaceGroup",
  method: "put",
  path: "/scim/v2/Groups/{id}",
  request: { params: IdParam },
  summary: "SCIM: replace a group",
  description:
    "Replaces its name, externalId and members; roles apply at once.",
  responses: { 200: scimJson("The group after the change", ETAG) },
  steps: [
    id,
    scimBody,
    scimIfMatch,
    projection,
    outcome("not_found", notFound),
    outcome("precondition_failed", preconditionFailed),
    ...groupFaults(writeFaults),
    failed,
  ],
});

export const patchGroup = scimRoute({
  operationId: "scimPatchGroup",
  method: "patch",
  path: "/scim/v2/Groups/{id}",
  request: { params: IdParam },
  summary: "SCIM: change a group (PATCH)",
  description:
    'All operations or none: `members` added, removed (`members[value eq "id"]`, or a value list) and replaced in one request, thousands at once; a rename. Roles of the members concerned apply at once.',
  responses: { 200: scimJson("The group after the change", ETAG) },
  steps: [
    id,
    scimBody,
    scimIfMatch,
    projection,
    outcome("not_found", notFound),
    outcome("precondition_failed", preconditionFailed),
    ...groupFaults(patchFaults),
    failed,
  ],
});

export const deleteGroup = scimRoute({
  operationId: "scimDeleteGroup",
  method: "delete",
  path: "/scim/v2/Groups/{id}",
  request: { params: IdParam },
  summary: "SCIM: delete a group",
  description: "Its members' roles apply at once.",
  responses: { 204: { description: "Deleted" } },
  steps: [
    id,
    scimIfMatch,
    outcome("not_found", notFound),
    outcome("precondition_failed", preconditionFailed),
    outcome("managed_elsewhere", managedElsewhere),
    failed,
  ],
});
