/**
 * `POST /scim/v2/Bulk` (RFC 7644 3.7): Users and Groups operations in one
 * request, each served as its single form (bulk.handlers.ts).
 */
import { z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import { failure } from "../http/openapi.ts";
import { TOO_LARGE } from "../http/body-text.ts";
import { passes } from "../http/steps.ts";
import {
  BULK_MAX_OPERATIONS,
  type BulkRequest,
  readBulkRequest,
} from "./bulk.ts";
import { scimCheck, scimError } from "./errors.ts";
import { scimObject, scimRoute } from "./steps.ts";

const payloadTooLarge = scimCheck(
  413,
  MSG.scimPayloadTooLarge,
  "the body is larger than `maxPayloadSize` (4,194,304 bytes)",
);
const invalidSyntax = scimCheck(
  400,
  MSG.scimInvalidSyntax,
  "the body is not a JSON object, `Operations` is not a list of objects, or `failOnErrors` is not a positive integer",
);
const tooManyOperations = scimCheck(
  413,
  MSG.scimTooManyOperations,
  "`Operations` has more than `maxOperations` (1,000)",
);

const METHODS = ["POST", "PUT", "PATCH", "DELETE"] as const;

const BulkRequestSchema = z.object({
  schemas: z.array(z.string()).openapi({
    example: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
  }),
  failOnErrors: z.number().int().min(1).optional().openapi({
    description: "Stop after this many operations failed",
  }),
  Operations: z.array(z.object({
    method: z.enum(METHODS),
    bulkId: z.string().optional().openapi({
      description:
        "Names a POST's new resource: `bulkId:<bulkId>` in a later operation's path or values stands for its id",
    }),
    version: z.string().optional().openapi({
      description: "As `If-Match` of the single request (PUT, PATCH, DELETE)",
    }),
    path: z.string().openapi({ example: "/Users" }),
    data: z.record(z.string(), z.unknown()).optional().openapi({
      description: "The single request's body (POST, PUT, PATCH)",
    }),
  })).max(BULK_MAX_OPERATIONS),
}).openapi("ScimBulkRequest");

const BulkResponseSchema = z.object({
  schemas: z.array(z.string()).openapi({
    example: ["urn:ietf:params:scim:api:messages:2.0:BulkResponse"],
  }),
  Operations: z.array(z.object({
    method: z.enum(METHODS),
    bulkId: z.string().optional(),
    location: z.string().optional().openapi({
      description: "The resource's URL (absent when a POST failed)",
    }),
    version: z.string().optional().openapi({
      description: "The resource's version after the operation",
    }),
    status: z.string().openapi({ example: "201" }),
    response: z.record(z.string(), z.unknown()).optional().openapi({
      description: "The SCIM error of an operation that failed",
    }),
  })),
}).openapi("ScimBulkResponse");

/** The BulkRequest: at most 4 MiB, a list of at most 1,000 operations. */
const bulkRequest = passes<"bulk", BulkRequest>(
  "bulk",
  [payloadTooLarge, invalidSyntax, tooManyOperations],
  async (c) => {
    const body = await scimObject(c);
    if (body === TOO_LARGE) return scimError(c, 413, MSG.scimPayloadTooLarge);
    if (body instanceof Response) return body;
    const read = readBulkRequest(body);
    if (read === "tooMany") {
      return scimError(c, 413, MSG.scimTooManyOperations);
    }
    if (typeof read === "string") {
      return scimError(c, 400, MSG.scimInvalidSyntax, read);
    }
    return read;
  },
  {
    body: {
      required: true,
      content: {
        "application/scim+json": { schema: BulkRequestSchema },
        "application/json": { schema: BulkRequestSchema },
      },
    },
  },
);

export const bulk = scimRoute({
  operationId: "scimBulk",
  method: "post",
  path: "/scim/v2/Bulk",
  summary: "SCIM: many operations in one request (Bulk)",
  description:
    "RFC 7644 3.7. `POST`, `PUT`, `PATCH` and `DELETE` of `/Users` and `/Groups`, in order, each exactly as its single request (its checks, its status, its audit records naming the connection); not atomic: an operation that failed leaves the ones before it applied. " +
    "A POST's `bulkId` names its new resource: `bulkId:<bulkId>` in a later operation's path or in any value of its `data` (a group's `members`) stands for its id; a `bulkId` that failed or has not come yet answers that operation 400 `invalidValue` (`Unresolved bulkId: <bulkId>`). " +
    "`version` is the operation's `If-Match`. `failOnErrors`: the operations after that many failures are not run. " +
    "Each operation's answer has its `status`, `location` and `version`, and a failed one's SCIM error as `response`.",
  responses: {
    200: {
      description: "A BulkResponse, one answer per operation run",
      content: { "application/scim+json": { schema: BulkResponseSchema } },
    },
  },
  steps: [bulkRequest, failure(MSG.scimFailed)],
});
