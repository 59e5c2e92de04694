import { z } from "@hono/zod-openapi";
import {
  adminRoute,
  changingAdmin,
  outranked,
  stepUp,
} from "../auth/guards.ts";
import { MSG } from "../http/messages.ts";
import {
  bodyTooLarge,
  check,
  failure,
  json,
  textHeader,
} from "../http/openapi.ts";
import {
  idempotencyKey,
  IdempotencyKeyHeader,
  idempotentRun,
  REPLAYED_HEADER,
} from "../http/idempotency.ts";
import { body, ifMatch, outcome, query } from "../http/steps.ts";
import {
  ACCOUNT_CHECKS,
  EMAIL_CHECKS,
  FIELDS_REQUIRED,
  NAME_CHECKS,
  PASSWORD_CHECKS,
} from "./account-checks.ts";
import {
  makingAdmin,
  notSelf,
  preconditionFailed,
  RECHECK,
  userExists,
  userId,
  userNotFound,
} from "./user-steps.ts";

import {
  AccountSchema,
  CreateUserSchema,
  DisableUserSchema,
  ETAG_HEADER,
  IdParam,
  IfMatch,
  IfNoneMatch,
  notModified,
  OkSchema,
  PROFILE_CHECKS,
  tags,
  UpdateUserSchema,
  UserDetailSchema,
  UserListItemSchema,
  UserSchema,
} from "./users.schemas.ts";
import {
  CountQuerySchema,
  ListQuerySchema,
  UserCountSchema,
} from "./list-query.schemas.ts";

export const list = adminRoute({
  permission: "users:read",
  operationId: "listUsers",
  method: "get",
  path: "/api/users",
  tags,
  summary: "List users",
  description:
    "Without parameters: every user, oldest first (ties by id), in one response, however many and however slowly the client reads (it is streamed; a failure after the first byte ends the transfer unfinished, never as a complete array). " +
    "Parameters page (`limit`, `after` with the `Link` header's `next`), order (`sort`: by creation time, username or last sign-in, either way), filter (`role`, `status`, `q`) and look up (`username`, `email`); they combine, and answers stay arrays of the same users. `include=state` adds each user's `disabled`, `lastLoginAt`, `mfaEnabled` and `source`. " +
    "A list read in several statements (a long list, a page walk) shows each user at most once and every user that existed throughout; see docs/api.md in the repository. " +
    "Every 200 carries an `ETag` that changes whenever any user is created, changed or deleted (on any instance); `If-None-Match` with it answers 304 while nothing changed.",
  request: { headers: IfNoneMatch },
  responses: {
    200: json(
      z.array(UserListItemSchema),
      "The users asked for, in the list's order (oldest first unless `sort` says otherwise)",
      {
        ...ETAG_HEADER,
        Link: textHeader(
          '`</api/users?...&after=CURSOR>; rel="next"` (RFC 8288) when `limit` cut the answer short: the same query, continued.',
        ),
      },
    ),
    ...notModified,
  },
  steps: [query(ListQuerySchema), failure(MSG.listFailed)],
});

export const count = adminRoute({
  permission: "users:read",
  operationId: "countUsers",
  method: "get",
  path: "/api/users/count",
  tags,
  summary: "Count users",
  description:
    "How many users the list's filters (`role`, `status`, `q`) match, as `GET /api/users` takes them. Exact up to 10,000; past that the database's estimate, with `exact: false`, so a count costs the same at a million users.",
  responses: {
    200: json(UserCountSchema, "How many users match"),
  },
  steps: [query(CountQuerySchema), failure(MSG.countFailed)],
});

export const get = adminRoute({
  permission: "users:read",
  operationId: "getUser",
  method: "get",
  path: "/api/users/{id}",
  tags,
  summary: "Get one user",
  description:
    "The user with this id, with their account state (`disabled`, `lastLoginAt`; the list's items do not carry these). An id that cannot exist (not a positive integer, or out of range) answers 404 like an unknown one. The 200 carries the user's `ETag`, which changes with every change of the user (a login, a disable, an enable, and a disable's `until` passing included); send it as `If-None-Match` (304 while unchanged) or as `If-Match` on PATCH and DELETE.",
  request: { params: IdParam, headers: IfNoneMatch },
  responses: {
    200: json(UserDetailSchema, "The user", ETAG_HEADER),
    ...notModified,
  },
  steps: [
    userId,
    outcome("not_found", userNotFound),
    failure(MSG.getFailed),
  ],
});

export const create = adminRoute({
  permission: "users:create",
  operationId: "createUser",
  method: "post",
  path: "/api/users",
  tags,
  summary: "Create a user",
  description:
    "With an `Idempotency-Key` header, a retry of the same request never creates a second user: see the header. " +
    RECHECK,
  request: { headers: IdempotencyKeyHeader },
  responses: {
    201: json(UserSchema, "Created", {
      Location: textHeader("/api/users/{id} of the new user"),
      ...REPLAYED_HEADER,
    }),
  },
  steps: [
    idempotencyKey,
    body(CreateUserSchema, [
      bodyTooLarge,
      FIELDS_REQUIRED,
      check(
        400,
        MSG.roleMustBeAdminOrViewer,
        "`role` is not `admin` or `viewer`",
      ),
      ...ACCOUNT_CHECKS,
      ...PROFILE_CHECKS,
      check(
        400,
        MSG.invalidBody,
        "a profile field (`department`) is not a string, or holds a control character",
      ),
    ], { malformed: "failure" }),
    makingAdmin,
    // The password stays out of the fingerprint: the database never holds
    // a fast hash of it.
    idempotentRun((got) => {
      const { password: _, ...fields } = got.body as { password: string };
      return fields;
    }),
    outcome(
      "duplicate",
      check(
        409,
        MSG.duplicateUser,
        "the username or e-mail is another user's, regardless of case, or looks like one that is (the same canonical form or UTS #39 skeleton)",
        REPLAYED_HEADER,
      ),
    ),
    failure(
      MSG.createFailed,
      "any other failure, a body that is not JSON included",
    ),
  ],
});

export const update = adminRoute({
  permission: ["users:update", "users:password"],
  operationId: "updateUser",
  method: "patch",
  path: "/api/users/{id}",
  tags,
  summary: "Change a user's role, password, name, e-mail or department",
  description:
    "Only what differs is changed and recorded: a new name, e-mail or department as `user.updated` `{changed}`, a role as `user.role_changed`, a password as `user.password_reset`. " +
    "A password reset ends all of that user's sessions except the caller's own (which stays, bound to the new password), and lifts the login throttle of that username from every address. A demotion revokes the keys the user minted for others. " +
    RECHECK,
  request: { params: IdParam, headers: IfMatch },
  responses: {
    200: json(AccountSchema, "The user after the change"),
  },
  steps: [
    body(UpdateUserSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.invalidRole,
        "`role` is given (not absent, `null` or empty) and is not `admin` or `viewer`",
      ),
      ...PASSWORD_CHECKS,
      ...NAME_CHECKS,
      ...EMAIL_CHECKS,
      ...PROFILE_CHECKS,
      check(
        400,
        MSG.invalidBody,
        "the body is not a JSON object, or `password`, `name`, `email` or `department` is not a string (or `department` holds a control character)",
      ),
    ]),
    makingAdmin,
    userId,
    changingAdmin((got) => got.id as number),
    ifMatch,
    outranked,
    outcome("not_found", userNotFound),
    outcome("precondition_failed", preconditionFailed),
    outcome(
      "duplicate",
      check(
        409,
        MSG.duplicateUser,
        "the new e-mail is another user's, regardless of case, or looks like one that is (the same canonical form or UTS #39 skeleton)",
      ),
    ),
    failure(MSG.updateFailed),
  ],
});

export const remove = adminRoute({
  permission: "users:delete",
  operationId: "deleteUser",
  method: "delete",
  path: "/api/users/{id}",
  tags,
  summary: "Delete a user",
  description: "Ends the user's sessions. " + RECHECK,
  request: { params: IdParam, headers: IfMatch },
  responses: {
    200: json(OkSchema, "Deleted"),
  },
  steps: [
    stepUp(),
    notSelf(MSG.cannotDeleteSelf),
    userId,
    ifMatch,
    outranked,
    outcome("not_found", userNotFound),
    outcome("precondition_failed", preconditionFailed),
    failure(MSG.deleteFailed),
  ],
});

export const disable = adminRoute({
  permission: "users:disable",
  operationId: "disableUser",
  method: "post",
  path: "/api/users/{id}/disable",
  tags,
  summary: "Disable a user: no login, every session ended",
  description:
    "The user can no longer sign in (a login with the right password answers 403 `Account disabled`), and all their sessions end in the same transaction; their requests answer 401 from then on, on every instance. " +
    "Without a body: no reason, no end. With `until` the user is active again from that moment by itself; the housekeeping sweep or the user's next login records `user.enabled` `{expired: true}`. " +
    "Disabling a disabled user changes its reason and end (its `since` stays). Recorded as `user.disabled` `{reason, until}`. " +
    RECHECK,
  request: { params: IdParam },
  responses: {
    200: json(UserDetailSchema, "The user, disabled", ETAG_HEADER),
  },
  steps: [
    notSelf(MSG.cannotDisableSelf),
    userId,
    userExists,
    changingAdmin((got) => got.id as number),
    body(DisableUserSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.invalidBody,
        "the body is not JSON, `reason` is not a string of at most 200 characters, or `until` is not an ISO 8601 date and time in the future",
      ),
    ], { optional: true }),
    outranked,
    outcome("not_found", userNotFound),
    failure(MSG.disableFailed),
  ],
});

export const enable = adminRoute({
  permission: "users:disable",
  operationId: "enableUser",
  method: "post",
  path: "/api/users/{id}/enable",
  tags,
  summary: "Enable a user",
  description:
    "Lifts a disable; a user who is not disabled is answered as is (200, nothing changes). Recorded as `user.enabled`. " +
    RECHECK,
  request: { params: IdParam },
  responses: {
    200: json(UserDetailSchema, "The user, enabled", ETAG_HEADER),
  },
  steps: [
    userId,
    outranked,
    outcome("not_found", userNotFound),
    failure(MSG.enableFailed),
  ],
});

// A user's sessions, mounted with the rest of /api/users.
export { endSession, endSessions, listSessions } from "./sessions.routes.ts";
