import { z } from "@hono/zod-openapi";
import { adminRoute, stepUp } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import { bodyTooLarge, check, failure, json } from "../http/openapi.ts";
import { body, outcome, pathParam } from "../http/steps.ts";
import { codePoints } from "../users/account-rules.ts";
import { OkSchema } from "../users/users.schemas.ts";
import { parseUserId } from "../users/user.ts";

const invalid = { error: MSG.invalidConnection };

const name = z.string(invalid).trim()
  .refine((s) => codePoints(s) >= 1 && codePoints(s) <= 100, invalid)
  .refine((s) => !/[\p{Cc}\p{Zl}\p{Zp}]/u.test(s), invalid)
  .openapi({
    description:
      "1..100 characters: the identity provider, as disable reasons (`Deprovisioned by <name>`) and audit records name it",
    example: "Okta",
  });

const adminGroups = z.array(
  z.string(invalid).refine(
    (s) => codePoints(s) >= 1 && codePoints(s) <= 256,
    invalid,
  ),
  invalid,
).max(100, invalid).openapi({
  description:
    "Display names of the connection's groups whose members are admins (compared without regard to case); members of its other groups are viewers. At most 100.",
  example: ["User Admins"],
});

export const ConnectionSchema = z.object({
  id: z.number().int().openapi({ example: 3 }),
  name: z.string().openapi({ example: "Okta" }),
  adminGroups: z.array(z.string()).openapi({ example: ["User Admins"] }),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-11-25T21:07:00.123Z",
  }),
  lastUsedAt: z.string().nullable().openapi({
    format: "date-time",
    description:
      "When the identity provider last made a request with the connection's token (ISO 8601 in UTC with milliseconds; kept to the minute: written at most once a minute); null before the first.",
    example: "2026-11-26T08:30:00.000Z",
  }),
}).openapi("ScimConnection");

export const NewConnectionSchema = z.object({
  ...ConnectionSchema.shape,
  token: z.string().openapi({
    description:
      "The bearer token of `/scim/v2`: `usc_` and 43 base64url characters. Shown in this answer only (the service keeps its SHA-256): paste it into the identity provider now.",
    example: "usc_Xq3kP0aZ7bYc1dEf2gHi3jKl4mNo5pQr6sTu7vWx8yZ",
  }),
}).openapi("NewScimConnection");

export const CreateConnectionSchema = z.object({
  name,
  adminGroups: adminGroups.nullish(),
}, invalid).openapi("CreateScimConnection");

export const UpdateConnectionSchema = z.object({
  name: name.nullish(),
  adminGroups: adminGroups.nullish(),
}, invalid).openapi("UpdateScimConnection");

const IdParam = z.object({ id: idParam("id", 3) });

const tags = ["SCIM"];

const notFound = check(
  404,
  MSG.connectionNotFound,
  "no live connection has this id (deleted ones included)",
);
const badBody = check(
  400,
  MSG.invalidConnection,
  "the body breaks a rule (`name` 1..100 characters without control characters, `adminGroups` at most 100 names of 1..256 characters), a body that is not JSON included",
);

export const create = adminRoute({
  permission: "scim:manage",
  operationId: "createScimConnection",
  method: "post",
  path: "/api/scim/connections",
  tags,
  summary: "Create a provisioning connection",
  description:
    "A connection for one identity provider (Okta, Entra ID, ...), with the bearer token it calls `/scim/v2` with, shown in this answer only. Recorded as `connection.created`.",
  responses: {
    201: json(NewConnectionSchema, "Created; `token` is shown this once"),
  },
  steps: [
    body(CreateConnectionSchema, [bodyTooLarge, badBody]),
    stepUp(),
    failure(MSG.connectionCreateFailed),
  ],
});

export const list = adminRoute({
  permission: "scim:manage",
  operationId: "listScimConnections",
  method: "get",
  path: "/api/scim/connections",
  tags,
  summary: "List provisioning connections",
  description: "The live connections, oldest first. Never a token.",
  responses: { 200: json(z.array(ConnectionSchema), "The connections") },
  steps: [failure(MSG.connectionListFailed)],
});

export const get = adminRoute({
  permission: "scim:manage",
  operationId: "getScimConnection",
  method: "get",
  path: "/api/scim/connections/{id}",
  tags,
  summary: "Get a provisioning connection",
  description: "One live connection. Never its token.",
  request: { params: IdParam },
  responses: { 200: json(ConnectionSchema, "The connection") },
  steps: [
    pathParam("id", parseUserId, notFound),
    outcome("not_found", notFound),
    failure(MSG.connectionGetFailed),
  ],
});

export const update = adminRoute({
  permission: "scim:manage",
  operationId: "updateScimConnection",
  method: "patch",
  path: "/api/scim/connections/{id}",
  tags,
  summary: "Rename a provisioning connection or change its admin groups",
  description:
    "A change of `adminGroups` applies the roles of the connection's group members at once (each change recorded as `user.role_changed`). Recorded as `connection.updated`.",
  request: { params: IdParam },
  responses: { 200: json(ConnectionSchema, "The connection after the change") },
  steps: [
    pathParam("id", parseUserId, notFound),
    body(UpdateConnectionSchema, [bodyTooLarge, badBody]),
    // Admin groups make admins of their members.
    stepUp(
      "`adminGroups` is given, the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
      (got) =>
        (got.body as { adminGroups?: unknown }).adminGroups !== undefined,
    ),
    outcome("not_found", notFound),
    failure(MSG.connectionUpdateFailed),
  ],
});

export const remove = adminRoute({
  permission: "scim:manage",
  operationId: "deleteScimConnection",
  method: "delete",
  path: "/api/scim/connections/{id}",
  tags,
  summary: "Delete a provisioning connection",
  description:
    "Revokes its token at once, on every instance (the next SCIM request with it answers 401). The users it provisioned stay, and so do its groups and the roles they gave. Recorded as `connection.deleted`.",
  request: { params: IdParam },
  responses: { 200: json(OkSchema, "Deleted") },
  steps: [
    pathParam("id", parseUserId, notFound),
    outcome("not_found", notFound),
    failure(MSG.connectionDeleteFailed),
  ],
});
