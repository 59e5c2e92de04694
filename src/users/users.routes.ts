import { createRoute, z } from "@hono/zod-openapi";
import { MSG } from "../http/messages.ts";
import {
  adminErrors,
  bodyTooLarge,
  cookieAuth,
  errors,
  json,
} from "../http/openapi.ts";
import { NewAccountSchema, passwordRules } from "./account-rules.ts";
import { parseUserId, ROLES, USER_ID_MAX } from "./user.ts";

export const AccountSchema = z.object({
  id: z.number().int().openapi({ example: 2 }),
  username: z.string().openapi({ example: "alice" }),
  name: z.string().openapi({ example: "Alice Example" }),
  email: z.string().openapi({ example: "alice@example.com" }),
  role: z.enum(ROLES),
}).openapi("Account");

export const UserSchema = AccountSchema.extend({
  createdAt: z.string().openapi({
    description: "ISO 8601 in UTC with milliseconds",
    example: "2026-11-25T21:07:00.123Z",
  }),
}).openapi("User");

export const OkSchema = z.object({ ok: z.literal(true) }).openapi("Ok");

/**
 * `{id}` as the contract's integer. Anything that cannot be a user's id
 * (`abc`, `1.5`, `-1`, out of range) becomes null, which the handler answers
 * with 404 at the point the contract's check order puts it.
 */
const IdParam = z.object({
  id: z.string().transform(parseUserId).openapi({
    param: { name: "id", in: "path" },
    type: "integer",
    minimum: 1,
    maximum: USER_ID_MAX,
    example: 2,
  }),
});

const PASSWORD_DOC =
  "At least 8 characters (Unicode code points) and at most 72 bytes as UTF-8, bcrypt's limit; no NUL (U+0000), at which bcrypt would stop reading. Never trimmed.";

/** The account rules (account-rules.ts) with their OpenAPI description. */
const account = NewAccountSchema.shape;

export const CreateUserSchema = z.object({
  username: account.username.openapi({
    description:
      "Unique under its canonical form (Unicode NFKC, then lower case: `Alice`, `ＡＬＩＣＥ` and `𝐚𝐥𝐢𝐜𝐞` are one name). " +
      "At most 64 characters, no control characters; no invisible or formatting characters (Unicode Cc, Cf, Zl, Zp, Co, Cn) " +
      "and no mix of confusable scripts (UTS #39 highly restrictive: Latin with Cyrillic or Greek is refused, Latin with Han, kana or Hangul is fine). Trimmed.",
    example: "alice",
  }),
  name: account.name.openapi({
    description: "At most 200 characters, no NUL (U+0000). Trimmed.",
    example: "Alice Example",
  }),
  email: account.email.openapi({
    description:
      "Unique under its canonical form, like the username. At most 254 characters, one `@` with text on both sides, no whitespace, control or invisible characters. Trimmed.",
    example: "alice@example.com",
  }),
  password: account.password.openapi({
    description: PASSWORD_DOC,
    example: "correct horse",
  }),
  role: z.enum(ROLES, {
    error: (issue) =>
      issue.input == null || issue.input === ""
        ? MSG.allFieldsRequired
        : MSG.roleMustBeAdminOrViewer,
  }).openapi({ example: "viewer" }),
}, { error: MSG.allFieldsRequired }).openapi("CreateUser", {
  description:
    "All five fields are required. Unknown fields are ignored; `null` counts as missing.",
});

export const UpdateUserSchema = z.object({
  role: z.enum([...ROLES, ""], { error: MSG.invalidRole }).nullish()
    .openapi({
      description: "New role. Absent, `null` or empty leaves it unchanged.",
      example: "admin",
    }),
  password: passwordRules(z.string({ error: MSG.invalidBody })).nullish()
    .openapi({
      description:
        `New password; it ends the user's other sessions. ${PASSWORD_DOC} Absent, \`null\` or empty leaves it unchanged.`,
      example: "a new passphrase",
    }),
}, { error: MSG.invalidBody }).openapi("UpdateUser");

const tags = ["users"];

const RECHECK =
  "The caller is checked again inside the write's transaction: one deleted, logged out or demoted meanwhile gets 401 or 403, so two admins deleting or demoting each other at once never both succeed.";

export const list = createRoute({
  operationId: "listUsers",
  method: "get",
  path: "/api/users",
  tags,
  summary: "List all users",
  description:
    "Every user, oldest first (ties by id), in one response without paging.",
  security: cookieAuth,
  responses: {
    200: json(z.array(UserSchema), "All users, oldest first"),
    ...adminErrors,
    500: errors("Unexpected failure", MSG.listFailed),
  },
});

export const get = createRoute({
  operationId: "getUser",
  method: "get",
  path: "/api/users/{id}",
  tags,
  summary: "Get one user",
  security: cookieAuth,
  request: { params: IdParam },
  responses: {
    200: json(UserSchema, "The user"),
    ...adminErrors,
    404: errors(
      "No user has this id (also for ids that cannot exist)",
      MSG.userNotFound,
    ),
    500: errors("Unexpected failure", MSG.getFailed),
  },
});

export const create = createRoute({
  operationId: "createUser",
  method: "post",
  path: "/api/users",
  tags,
  summary: "Create a user",
  description:
    "Checks, in order: all fields present and non-empty; role; password at least 8 characters; then the username's length, then its characters; the name's and email's limits; the password's length, then NUL in it; then uniqueness. " +
    RECHECK,
  security: cookieAuth,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: CreateUserSchema } },
    },
  },
  responses: {
    201: {
      ...json(UserSchema, "Created"),
      headers: {
        Location: {
          description: "/api/users/{id} of the new user",
          schema: { type: "string" },
        },
      },
    },
    400: errors(
      "A field is missing or breaks a rule",
      MSG.allFieldsRequired,
      MSG.roleMustBeAdminOrViewer,
      MSG.passwordTooShort,
      MSG.usernameInvalid,
      MSG.usernameCharacters,
      MSG.nameTooLong,
      MSG.emailInvalid,
      MSG.passwordTooLong,
      MSG.passwordNul,
      MSG.invalidBody,
    ),
    ...adminErrors,
    409: errors(
      "The username or e-mail is taken (regardless of case)",
      MSG.duplicateUser,
    ),
    ...bodyTooLarge,
    500: errors(
      "Unexpected failure, including a body that is not JSON",
      MSG.createFailed,
    ),
  },
});

export const update = createRoute({
  operationId: "updateUser",
  method: "patch",
  path: "/api/users/{id}",
  tags,
  summary: "Change a user's role and/or reset the password",
  description:
    "Role is checked before password (length, then NUL); then the id. A password reset ends all of that user's sessions except the caller's own (which stays, bound to the new password), and lifts the login throttle of that username from every address. " +
    RECHECK,
  security: cookieAuth,
  request: {
    params: IdParam,
    body: {
      required: true,
      content: { "application/json": { schema: UpdateUserSchema } },
    },
  },
  responses: {
    200: json(AccountSchema, "The user after the change"),
    400: errors(
      "The body or a field is invalid",
      MSG.invalidRole,
      MSG.passwordTooShort,
      MSG.passwordTooLong,
      MSG.passwordNul,
      MSG.invalidBody,
    ),
    ...adminErrors,
    404: errors("No user has this id", MSG.userNotFound),
    ...bodyTooLarge,
    500: errors("Unexpected failure", MSG.updateFailed),
  },
});

export const remove = createRoute({
  operationId: "deleteUser",
  method: "delete",
  path: "/api/users/{id}",
  tags,
  summary: "Delete a user",
  description:
    "An admin cannot delete their own account; this is decided before any lookup. Ends the user's sessions. " +
    RECHECK,
  security: cookieAuth,
  request: { params: IdParam },
  responses: {
    200: json(OkSchema, "Deleted"),
    400: errors("The id is the caller's own", MSG.cannotDeleteSelf),
    ...adminErrors,
    404: errors("No user has this id", MSG.userNotFound),
    500: errors("Unexpected failure", MSG.deleteFailed),
  },
});
