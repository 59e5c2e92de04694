/**
 * `/scim/v2` lists and searches, with the connection's bearer token:
 * Users, Groups and both at once (`POST /scim/v2/.search`), paged by
 * `startIndex` (RFC 7644 3.4.2.4) or by cursor (RFC 9865). The parameters
 * are read by list-query.ts.
 */
import { MSG } from "../http/messages.ts";
import { failure } from "../http/openapi.ts";
import { listQuery } from "./list-query.ts";
import { scimBody, scimJson, scimRoute } from "./steps.ts";

const failed = failure(MSG.scimFailed);

const PAGING =
  "`startIndex` (1-based; below 1 counts as 1), `count` (default 100, capped at 1000; 0 answers `totalResults` only); " +
  "or `cursor` (RFC 9865): empty for the first page, then the answer's `nextCursor` (absent on the last page) or `previousCursor` (absent on the first), each valid for 3600 seconds and for the same filter and sort only. " +
  "A walk by cursor returns every resource that exists from its first page to its last exactly once, whatever is created or deleted meanwhile (sorted by `meta.lastModified` or a name, a resource changed meanwhile may move). " +
  "`attributes`/`excludedAttributes`.";

const listDescription = (what: string, filterable: string, sorts: string) =>
  `${what}, \`totalResults\` of all that match. \`filter\` on ${filterable} (the whole RFC 7644 grammar, compiled to SQL); ` +
  `\`sortBy\` ${sorts}; ${PAGING}`;

const USERS_DESCRIPTION = listDescription(
  "Every user (made through SCIM or `/api` alike)",
  "`id`, `userName` (under the canonical key), `externalId`, `emails.value`, `emails[...]`, `active`, `displayName`, `name.formatted`, `meta.created`, `meta.lastModified`",
  "`userName`, `meta.created` or `meta.lastModified`",
) +
  " Every page is read in index order: by cursor, and by `startIndex` when the pages are read in sequence.";

const GROUPS_DESCRIPTION = listDescription(
  "This connection's groups",
  "`id`, `displayName`, `externalId`, `members.value`, `meta.created`, `meta.lastModified`",
  "`displayName`, `meta.created` or `meta.lastModified`",
);

export const listUsers = scimRoute({
  operationId: "scimListUsers",
  method: "get",
  path: "/scim/v2/Users",
  summary: "SCIM: list users",
  description: USERS_DESCRIPTION,
  responses: { 200: scimJson("A ListResponse of users") },
  steps: [listQuery("users", "query"), failed],
});

export const searchUsers = scimRoute({
  operationId: "scimSearchUsers",
  method: "post",
  path: "/scim/v2/Users/.search",
  summary: "SCIM: search users (POST)",
  description:
    "As `GET /scim/v2/Users`, the parameters in a SearchRequest body (`attributes` and `excludedAttributes` as arrays).",
  responses: { 200: scimJson("A ListResponse of users") },
  steps: [scimBody, listQuery("users", "body"), failed],
});

export const listGroups = scimRoute({
  operationId: "scimListGroups",
  method: "get",
  path: "/scim/v2/Groups",
  summary: "SCIM: list groups",
  description: GROUPS_DESCRIPTION,
  responses: { 200: scimJson("A ListResponse of groups") },
  steps: [listQuery("groups", "query"), failed],
});

export const searchGroups = scimRoute({
  operationId: "scimSearchGroups",
  method: "post",
  path: "/scim/v2/Groups/.search",
  summary: "SCIM: search groups (POST)",
  description:
    "As `GET /scim/v2/Groups`, the parameters in a SearchRequest body (`attributes` and `excludedAttributes` as arrays).",
  responses: { 200: scimJson("A ListResponse of groups") },
  steps: [scimBody, listQuery("groups", "body"), failed],
});

export const searchAll = scimRoute({
  operationId: "scimSearch",
  method: "post",
  path: "/scim/v2/.search",
  summary: "SCIM: search users and groups (POST)",
  description:
    "RFC 7644 3.4.3 at the root: the users, then this connection's groups, in one ListResponse; each result has its `schemas` and `meta.resourceType` (`User` or `Group`), whatever `attributes` asks. " +
    'The parameters in a SearchRequest body, as `POST /scim/v2/Users/.search` takes them: `filter` may name the attributes of either type (an attribute a type lacks matches none of its resources: `userName eq "alice"` finds no group); ' +
    "`sortBy` sorts each type by what it has (`userName` the users, `displayName` the groups, `meta.created` and `meta.lastModified` both; otherwise by id); `startIndex` and `cursor` page through the users and then the groups, `totalResults` counts both.",
  responses: { 200: scimJson("A ListResponse of users and groups") },
  steps: [scimBody, listQuery("all", "body"), failed],
});
