import { z } from "@hono/zod-openapi";
import { adminRoute } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import { bodyTooLarge, check, failure, json } from "../http/openapi.ts";
import { body, documented, outcome, pathParam } from "../http/steps.ts";
import { codePoints } from "../users/account-rules.ts";
import { parseUserId } from "../users/user.ts";
import { OkSchema } from "../users/users.schemas.ts";

const tags = ["groups"];

const CONTROL = /\p{Cc}/u;

const invalid = { error: MSG.invalidBody };

export const GroupSchema = z.object({
  id: z.number().int().openapi({ example: 5 }),
  displayName: z.string().openapi({ example: "Help desk" }),
  externalId: z.string().nullable().openapi({ example: null }),
  connectionId: z.number().int().nullable().openapi({
    description:
      "The SCIM connection that owns the group (its identity provider pushes it; read-only here), or null for a group made here",
    example: null,
  }),
  members: z.array(z.object({
    id: z.number().int().openapi({ example: 42 }),
    username: z.string().openapi({ example: "jdoe" }),
  })).openapi({ description: "By id" }),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-11-25T21:07:00.123Z",
  }),
}).openapi("Group");

const displayName = z.string(invalid)
  .refine((s) => {
    const n = codePoints(s.trim());
    return n >= 1 && n <= 256 && !CONTROL.test(s);
  }, invalid)
  .transform((s) => s.trim())
  .openapi({
    description:
      "1..256 characters (Unicode code points, trimmed), no control characters",
    minLength: 1,
    maxLength: 256,
    example: "Help desk",
  });

const externalId = z.string(invalid)
  .refine((s) => {
    const n = codePoints(s);
    return n >= 1 && n <= 256 && !CONTROL.test(s);
  }, invalid)
  .openapi({
    description: "1..256 characters, no control characters; null for none",
    example: "00g1a2b3c4",
  });

export const CreateGroupSchema = z.object({
  displayName,
  externalId: externalId.nullish(),
}, invalid).openapi("CreateGroup", {
  description: "Unknown fields are ignored. Members: `/members` below.",
});

export const UpdateGroupSchema = z.object({
  displayName: displayName.optional(),
  externalId: externalId.nullable().optional(),
}, invalid).openapi("UpdateGroup", {
  description: "Only what is given changes; `externalId: null` removes it.",
});

export const GroupMembersSchema = z.object({
  userIds: z.array(
    z.number(invalid).int(invalid).min(1, invalid).max(2_147_483_647, invalid),
    invalid,
  ).max(10_000, invalid).openapi({ example: [42, 43] }),
}, invalid).openapi("GroupMembers");

const GroupParam = z.object({ id: idParam("id", 5) });

const groupNotFound = check(
  404,
  MSG.groupNotFound,
  "no group has the id (also for ids that cannot exist)",
);

const groupId = pathParam("id", parseUserId, groupNotFound);

const badBody = check(
  400,
  MSG.invalidBody,
  "the body breaks a rule (`displayName` 1..256 characters, `externalId` 1..256 or null; no control characters), a body that is not JSON included",
);

const badMembers = check(
  400,
  MSG.invalidBody,
  "the body is not `{userIds}` of at most 10000 positive integers (a body that is not JSON included)",
);

const providerOwned = check(
  409,
  MSG.groupProviderOwned,
  "a SCIM connection owns the group (`connectionId`): its identity provider would overwrite a change made here",
);

const OWNED =
  " A group a SCIM connection owns is read-only here: 409 `Group is managed by its identity provider: change it there`.";

export const list = adminRoute({
  permission: "roles:manage",
  operationId: "listGroups",
  method: "get",
  path: "/api/groups",
  tags,
  summary: "List groups",
  description:
    "Every group, oldest first: those made here and those SCIM connections push, with their members.",
  responses: { 200: json(z.array(GroupSchema), "The groups") },
  steps: [failure(MSG.groupListFailed)],
});

export const create = adminRoute({
  permission: "roles:manage",
  operationId: "createGroup",
  method: "post",
  path: "/api/groups",
  tags,
  summary: "Create a group",
  description: "A group without members. Recorded as `group.created`.",
  responses: { 201: json(GroupSchema, "Created") },
  steps: [
    body(CreateGroupSchema, [bodyTooLarge, badBody]),
    failure(MSG.groupCreateFailed),
  ],
});

export const get = adminRoute({
  permission: "roles:manage",
  operationId: "getGroup",
  method: "get",
  path: "/api/groups/{id}",
  tags,
  summary: "Get one group",
  description: "The group with its members.",
  request: { params: GroupParam },
  responses: { 200: json(GroupSchema, "The group") },
  steps: [
    groupId,
    outcome("not_found", groupNotFound),
    failure(MSG.groupGetFailed),
  ],
});

export const update = adminRoute({
  permission: "roles:manage",
  operationId: "updateGroup",
  method: "patch",
  path: "/api/groups/{id}",
  tags,
  summary: "Change a group",
  description:
    "Only what differs is changed and recorded as `group.updated` `{changed}`." +
    OWNED,
  request: { params: GroupParam },
  responses: { 200: json(GroupSchema, "The group after the change") },
  steps: [
    body(UpdateGroupSchema, [bodyTooLarge, badBody]),
    groupId,
    outcome("not_found", groupNotFound),
    outcome("provider_owned", providerOwned),
    failure(MSG.groupUpdateFailed),
  ],
});

export const remove = adminRoute({
  permission: "roles:manage",
  operationId: "deleteGroup",
  method: "delete",
  path: "/api/groups/{id}",
  tags,
  summary: "Delete a group",
  description:
    'Ends the assignments it carries in the same transaction (each recorded as `assignment.deleted` `{reason: "group deleted"}`), then `group.deleted`: its members lose what it gave from their next request, on every instance.' +
    OWNED,
  request: { params: GroupParam },
  responses: { 200: json(OkSchema, "Deleted") },
  steps: [
    groupId,
    outcome("not_found", groupNotFound),
    outcome("provider_owned", providerOwned),
    failure(MSG.groupDeleteFailed),
  ],
});

const membersRoute = (
  method: "put" | "post" | "delete",
  operationId: string,
  summary: string,
  what: string,
) =>
  adminRoute({
    permission: "roles:manage",
    operationId,
    method,
    path: "/api/groups/{id}/members",
    tags,
    summary,
    description: what +
      " Recorded as `group.members_changed` `{added, removed}` (user ids) when anything changed; a member holds the roles given to the group from their next request, and one removed is refused at theirs, on every instance. Adding someone to a group that carries a role grants it: a caller who does not hold every permission the group's roles grant answers 403 `Cannot grant more than you hold`; nobody adds or removes someone who holds a permission they do not (403 `Cannot act on a more privileged user`)." +
      OWNED,
    request: { params: GroupParam },
    responses: { 200: json(GroupSchema, "The group after the change") },
    steps: [
      body(GroupMembersSchema, [bodyTooLarge, badMembers]),
      groupId,
      outcome("not_found", groupNotFound),
      outcome("provider_owned", providerOwned),
      outcome(
        "user_not_found",
        check(404, MSG.userNotFound, "no user has one of `userIds`"),
      ),
      documented(
        check(
          403,
          MSG.cannotActOnMorePrivileged,
          "someone who joins or leaves holds a permission the caller does not (an admin's every one included)",
        ),
      ),
      outcome(
        "beyond_held",
        check(
          403,
          MSG.cannotGrantMore,
          "someone is added and the group's roles grant a permission the caller does not hold",
        ),
      ),
      failure(MSG.groupMembersFailed),
    ],
  });

export const setMembers = membersRoute(
  "put",
  "setGroupMembers",
  "Replace a group's members",
  "The members become exactly `userIds`.",
);

export const addMembers = membersRoute(
  "post",
  "addGroupMembers",
  "Add members to a group",
  "`userIds` join the group (those in it already stay).",
);

export const removeMembers = membersRoute(
  "delete",
  "removeGroupMembers",
  "Remove members from a group",
  "`userIds` leave the group (those not in it are ignored).",
);
