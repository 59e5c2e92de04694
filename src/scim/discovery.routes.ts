/**
 * `/scim/v2` discovery (RFC 7644 4), without a token: what the service
 * supports, its resource types and its schemas, each list and each one by
 * its id (the `meta.location` each document gives). A `filter` on any of
 * them answers 403: these documents are never filtered, so a client must
 * not take them for a filter's matches.
 */
import { z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import { failure } from "../http/openapi.ts";
import { passes, pathParam } from "../http/steps.ts";
import { scimCheck, scimError } from "./errors.ts";
import { resourceTypeOf, schemaOf, USER_SCHEMA } from "./schema.ts";
import { openScimRoute, scimJson } from "./steps.ts";

const filterUnsupported = scimCheck(
  403,
  MSG.scimFilterUnsupported,
  "a `filter` is given: discovery documents are never filtered",
);

/** No `filter` (RFC 7644 4: a service "SHOULD respond with HTTP status code 403"). */
const noFilter = passes<"noFilter", true>(
  "noFilter",
  [filterUnsupported],
  (c) =>
    c.req.query("filter") ? scimError(c, 403, MSG.scimFilterUnsupported) : true,
  {
    query: z.object({
      filter: z.string().optional().openapi({
        description: "Not supported here: any filter answers 403",
      }),
    }),
  },
);

const noSchema = scimCheck(
  404,
  MSG.scimNotFound,
  "the service has no schema of that URI",
);
const noResourceType = scimCheck(
  404,
  MSG.scimNotFound,
  "the service has no resource type of that name",
);

/** The schema's id as the service spells it (compared without regard to case). */
const schemaId = pathParam("uri", (uri) => schemaOf(uri) ?? null, noSchema);
const resourceTypeName = pathParam(
  "name",
  (name) => resourceTypeOf(name) ?? null,
  noResourceType,
);

const failed = failure(MSG.scimFailed);

export const serviceProviderConfig = openScimRoute({
  operationId: "scimServiceProviderConfig",
  method: "get",
  path: "/scim/v2/ServiceProviderConfig",
  summary: "SCIM: what the service supports",
  description:
    "PATCH, bulk (at most 1000 operations and 4 MiB), filter (at most 1000 results a page), sort, ETags and password changes are supported; pages by index (the default) and by cursor (RFC 9865).",
  responses: { 200: scimJson("The service provider configuration") },
  steps: [noFilter, failed],
});

export const resourceTypes = openScimRoute({
  operationId: "scimResourceTypes",
  method: "get",
  path: "/scim/v2/ResourceTypes",
  summary: "SCIM: resource types",
  description: "User (with the enterprise extension) and Group.",
  responses: { 200: scimJson("A ListResponse of the resource types") },
  steps: [noFilter, failed],
});

export const resourceType = openScimRoute({
  operationId: "scimResourceType",
  method: "get",
  path: "/scim/v2/ResourceTypes/{name}",
  request: {
    params: z.object({
      name: z.string().openapi({
        description: "`User` or `Group` (without regard to case)",
        example: "User",
      }),
    }),
  },
  summary: "SCIM: one resource type",
  description:
    "The resource type as `GET /scim/v2/ResourceTypes` lists it, on its own.",
  responses: { 200: scimJson("The resource type") },
  steps: [resourceTypeName, noFilter, failed],
});

export const schemas = openScimRoute({
  operationId: "scimSchemas",
  method: "get",
  path: "/scim/v2/Schemas",
  summary: "SCIM: schemas",
  description:
    "The core User, the enterprise User extension and the core Group, with every attribute the service keeps, as the service treats it: what it requires (`userName`; `emails` with a `value`), what it sets itself (`readOnly`), what each reference may point to (`referenceTypes`).",
  responses: { 200: scimJson("A ListResponse of the schemas") },
  steps: [noFilter, failed],
});

export const schema = openScimRoute({
  operationId: "scimSchema",
  method: "get",
  path: "/scim/v2/Schemas/{uri}",
  request: {
    params: z.object({
      uri: z.string().openapi({
        description: "The schema's URI (without regard to case)",
        example: USER_SCHEMA,
      }),
    }),
  },
  summary: "SCIM: one schema",
  description: "The schema as `GET /scim/v2/Schemas` lists it, on its own.",
  responses: { 200: scimJson("The schema") },
  steps: [schemaId, noFilter, failed],
});
