import { z } from "@hono/zod-openapi";
import {
  adminRoute,
  knownPermissions,
  outranked,
  withinHeld,
} from "../auth/guards.ts";
import { PERMISSIONS } from "../auth/permissions.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import { bodyTooLarge, check, failure, json } from "../http/openapi.ts";
import { body, ifMatch, outcome, pathParam, query } from "../http/steps.ts";
import { codePoints } from "../users/account-rules.ts";
import { parseUserId } from "../users/user.ts";
import { ETAG_HEADER, OkSchema } from "../users/users.schemas.ts";

const tags = ["roles"];

const CONTROL = /\p{Cc}/u;

const invalid = { error: MSG.invalidBody };

const PermissionList = z.array(z.string(invalid), invalid).openapi({
  description: `Permission names, each once, from the catalogue: ${
    PERMISSIONS.map((p) => `\`${p}\``).join(", ")
  }.`,
  example: ["users:read", "users:password", "users:sessions"],
});

export const RoleSchema = z.object({
  id: z.number().int().openapi({ example: 3 }),
  name: z.string().openapi({ example: "Help desk" }),
  description: z.string().openapi({
    example: "Resets passwords and ends sessions",
  }),
  permissions: z.array(z.string()).openapi({
    description: "In the catalogue's order",
    example: ["users:read", "users:password", "users:sessions"],
  }),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-11-25T21:07:00.123Z",
  }),
}).openapi("Role");

const name = z.string(invalid)
  .refine((s) => {
    const n = codePoints(s.trim());
    return n >= 1 && n <= 64 && !CONTROL.test(s);
  }, invalid)
  .transform((s) => s.trim())
  .openapi({
    description:
      "1..64 characters (Unicode code points, trimmed), no control characters; unique regardless of case and Unicode form (the canonical key usernames use)",
    minLength: 1,
    maxLength: 64,
    example: "Help desk",
  });

const description = z.string(invalid)
  .refine((s) => codePoints(s) <= 200 && !CONTROL.test(s), invalid)
  .openapi({
    description: "0..200 characters, no control characters",
    maxLength: 200,
    example: "Resets passwords and ends sessions",
  });

export const CreateRoleSchema = z.object({
  name,
  description: description.nullish(),
  permissions: PermissionList.nullish(),
}, invalid).openapi("CreateRole", {
  description:
    'Unknown fields are ignored; `null` counts as missing (`description` "", `permissions` []).',
});

export const UpdateRoleSchema = z.object({
  name: name.nullish(),
  description: description.nullish(),
  permissions: PermissionList.nullish(),
}, invalid).openapi("UpdateRole", {
  description:
    "Only what is given changes; `permissions` replaces the whole list.",
});

const RoleParam = z.object({ id: idParam("id", 3) });

const roleNotFound = check(
  404,
  MSG.roleNotFound,
  "no role has the id (also for ids that cannot exist)",
);

const roleId = pathParam("id", parseUserId, roleNotFound);

const badBody = check(
  400,
  MSG.invalidBody,
  "the body breaks a rule (`name` 1..64 characters, `description` at most 200, `permissions` an array of strings; no control characters), a body that is not JSON included",
);

const nameTaken = check(
  409,
  MSG.roleNameTaken,
  "another role has this name, regardless of case and Unicode form",
);

const beyondHeld = check(
  403,
  MSG.cannotGrantMore,
  "the role grants (before or after the change) a permission the caller does not hold",
);

const precondition = check(
  412,
  MSG.preconditionFailed,
  "`If-Match` names another version of the role: it changed since it was read",
);

const IfMatchRole = z.object({
  "if-match": z.string().optional().openapi({
    description:
      "The role's `ETag` (from `GET /api/roles/{id}`), or `*`: the write happens only if the role is still at that version, else 412 `Precondition failed`.",
  }),
});

const GRANTS =
  " Nobody grants more than they hold: a role naming a permission the caller does not hold answers 403 `Cannot grant more than you hold`.";

export const list = adminRoute({
  permission: "roles:manage",
  operationId: "listRoles",
  method: "get",
  path: "/api/roles",
  tags,
  summary: "List roles",
  description:
    "Every role, oldest first. The built-in `admin` (every permission) and `viewer` (none) are account roles, not listed here.",
  responses: { 200: json(z.array(RoleSchema), "The roles") },
  steps: [failure(MSG.roleListFailed)],
});

export const create = adminRoute({
  permission: "roles:manage",
  operationId: "createRole",
  method: "post",
  path: "/api/roles",
  tags,
  summary: "Create a role",
  description: "A named set of permissions. Recorded as `role.created`." +
    GRANTS,
  responses: {
    201: json(RoleSchema, "Created", {
      ...ETAG_HEADER,
    }),
  },
  steps: [
    body(CreateRoleSchema, [bodyTooLarge, badBody]),
    knownPermissions,
    withinHeld,
    outcome("duplicate", nameTaken),
    failure(MSG.roleCreateFailed),
  ],
});

export const get = adminRoute({
  permission: "roles:manage",
  operationId: "getRole",
  method: "get",
  path: "/api/roles/{id}",
  tags,
  summary: "Get one role",
  description:
    "The role, with an `ETag` that changes with every change of it: send it as `If-Match` on PATCH and DELETE.",
  request: { params: RoleParam },
  responses: { 200: json(RoleSchema, "The role", ETAG_HEADER) },
  steps: [
    roleId,
    outcome("not_found", roleNotFound),
    failure(MSG.roleGetFailed),
  ],
});

export const update = adminRoute({
  permission: "roles:manage",
  operationId: "updateRole",
  method: "patch",
  path: "/api/roles/{id}",
  tags,
  summary: "Change a role",
  description:
    "Only what differs is changed and recorded as `role.updated` `{changed}`; the role's holders hold the new permissions from their next request, on every instance. Two admins changing one role at once: with `If-Match`, the second answers 412." +
    GRANTS,
  request: { params: RoleParam, headers: IfMatchRole },
  responses: {
    200: json(RoleSchema, "The role after the change", ETAG_HEADER),
  },
  steps: [
    body(UpdateRoleSchema, [bodyTooLarge, badBody]),
    knownPermissions,
    withinHeld,
    roleId,
    ifMatch,
    outcome("not_found", roleNotFound),
    outcome("precondition_failed", precondition),
    outcome("beyond_held", beyondHeld),
    outcome("duplicate", nameTaken),
    failure(MSG.roleUpdateFailed),
  ],
});

export const remove = adminRoute({
  permission: "roles:manage",
  operationId: "deleteRole",
  method: "delete",
  path: "/api/roles/{id}",
  tags,
  summary: "Delete a role",
  description:
    'Ends its assignments in the same transaction (each recorded as `assignment.deleted` `{reason: "role deleted"}`), then `role.deleted`: its holders lose its permissions from their next request, on every instance.' +
    GRANTS,
  request: { params: RoleParam, headers: IfMatchRole },
  responses: { 200: json(OkSchema, "Deleted") },
  steps: [
    roleId,
    ifMatch,
    outcome("not_found", roleNotFound),
    outcome("precondition_failed", precondition),
    outcome("beyond_held", beyondHeld),
    failure(MSG.roleDeleteFailed),
  ],
});

export const AssignmentSchema = z.object({
  id: z.number().int().openapi({ example: 11 }),
  roleId: z.number().int().openapi({ example: 3 }),
  userId: z.number().int().optional().openapi({
    description: "The user given the role (absent for a group's)",
    example: 42,
  }),
  groupId: z.number().int().optional().openapi({
    description:
      "The group given the role: each of its members holds it (absent for a user's)",
  }),
  reachGroupId: z.number().int().nullable().openapi({
    description:
      "The group whose members the holder acts on with this role; null: every user",
    example: null,
  }),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-11-25T21:07:00.123Z",
  }),
}).openapi("Assignment");

const badAssignment = { error: MSG.invalidAssignment };
const positiveId = z.number(badAssignment).int(badAssignment).min(
  1,
  badAssignment,
).max(2_147_483_647, badAssignment);

export const CreateAssignmentSchema = z.strictObject({
  roleId: positiveId.openapi({ example: 3 }),
  userId: positiveId.optional().openapi({ example: 42 }),
  groupId: positiveId.optional(),
  reachGroupId: positiveId.optional().openapi({ example: 5 }),
}, badAssignment).refine(
  (a) => (a.userId === undefined) !== (a.groupId === undefined),
  badAssignment,
).openapi("CreateAssignment", {
  description:
    "A role for one user (`userId`) or for every member of a group (`groupId`): exactly one of them. With `reachGroupId` the holder acts only on the members of that group, and the assignment grants only the permissions that act on users (see docs/delegation.md).",
});

const AssignmentQuery = z.object({
  userId: z.coerce.number().int().min(1).max(2_147_483_647).optional()
    .openapi({ type: "integer", example: 42 }),
  groupId: z.coerce.number().int().min(1).max(2_147_483_647).optional()
    .openapi({ type: "integer", example: 5 }),
  roleId: z.coerce.number().int().min(1).max(2_147_483_647).optional()
    .openapi({ type: "integer", example: 3 }),
});

const assignmentNotFound = check(
  404,
  MSG.assignmentNotFound,
  "no assignment has the id (also for ids that cannot exist)",
);

export const listAssignments = adminRoute({
  permission: "roles:manage",
  operationId: "listAssignments",
  method: "get",
  path: "/api/assignments",
  tags,
  summary: "List role assignments",
  description:
    "Every assignment, oldest first; `userId`, `groupId` and `roleId` filter (together: the assignments matching all). `userId` finds a user's own assignments, not their groups'.",
  responses: { 200: json(z.array(AssignmentSchema), "The assignments") },
  steps: [query(AssignmentQuery), failure(MSG.assignmentListFailed)],
});

export const assign = adminRoute({
  permission: "roles:manage",
  operationId: "createAssignment",
  method: "post",
  path: "/api/assignments",
  tags,
  summary: "Give a role to a user or a group",
  description:
    "The user, or each member of the group, holds the role's permissions from their next request, on every instance, over every user or (`reachGroupId`) over the members of that group. Recorded as `assignment.created`, its target the user (none for a group: `details.groupId`; `details.reachGroupId` when limited). Nobody grants a role naming a permission they do not hold over a reach covering the assignment's (403 `Cannot grant more than you hold`), nor acts on a user who holds a permission or reach they do not.",
  responses: { 201: json(AssignmentSchema, "Created") },
  steps: [
    body(CreateAssignmentSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.invalidAssignment,
        "the body is not an object of `roleId`, exactly one of `userId` and `groupId`, and optionally `reachGroupId`, each a positive integer, and nothing else (a body that is not JSON included)",
      ),
    ]),
    outranked,
    outcome(
      "user_not_found",
      check(
        404,
        MSG.userNotFound,
        "no user has `userId` (deleted, say)",
      ),
    ),
    outcome(
      "group_not_found",
      check(
        404,
        MSG.groupNotFound,
        "no group has `groupId` or `reachGroupId` (deleted, say)",
      ),
    ),
    outcome(
      "not_found",
      check(404, MSG.roleNotFound, "no role has `roleId` (deleted, say)"),
    ),
    outcome(
      "beyond_held",
      check(
        403,
        MSG.cannotGrantMore,
        "the assignment grants a permission the caller does not hold over a reach covering its own (every user without `reachGroupId`, else that group's members)",
      ),
    ),
    outcome(
      "duplicate",
      check(
        409,
        MSG.assignmentExists,
        "the user, or the group, has this role over this reach already",
      ),
    ),
    failure(MSG.assignmentCreateFailed),
  ],
});

export const unassign = adminRoute({
  permission: "roles:manage",
  operationId: "deleteAssignment",
  method: "delete",
  path: "/api/assignments/{id}",
  tags,
  summary: "End a role assignment",
  description:
    "The user, or each member of the group, loses the role's permissions from their next request, on every instance. Recorded as `assignment.deleted`.",
  request: { params: z.object({ id: idParam("id", 11) }) },
  responses: { 200: json(OkSchema, "Deleted") },
  steps: [
    pathParam("id", parseUserId, assignmentNotFound),
    outranked,
    outcome("not_found", assignmentNotFound),
    failure(MSG.assignmentDeleteFailed),
  ],
});
