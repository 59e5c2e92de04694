import { z } from "@hono/zod-openapi";
import { adminRoute, changingAdmin, stepUp } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { isoDateTime } from "../http/time.ts";
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
import { errorResponse } from "../http/errors.ts";
import {
  body,
  guards,
  ifMatch,
  load,
  outcome,
  pathParam,
  query,
} from "../http/steps.ts";
import { MfaSummarySchema } from "../mfa/mfa.schemas.ts";
import { decodeCursor } from "./listing.ts";
import {
  ACCOUNT_CHECKS,
  EMAIL_CHECKS,
  FIELDS_REQUIRED,
  NAME_CHECKS,
  PASSWORD_CHECKS,
} from "./account-checks.ts";
import {
  codePoints,
  emailRules,
  nameRules,
  NewAccountSchema,
  passwordRules,
} from "./account-rules.ts";
import {
  PROFILE_MESSAGES,
  profileBodyShape,
  profileDetailShape,
} from "../accounts/fields.ts";
import { parseUserId, ROLES } from "./user.ts";

export const AccountSchema = z.object({
  id: z.number().int().openapi({ example: 2 }),
  username: z.string().openapi({ example: "alice" }),
  name: z.string().openapi({ example: "Alice Example" }),
  email: z.string().openapi({ example: "alice@example.com" }),
  role: z.enum(ROLES),
}).openapi("Account");

// Spread, not `.extend`: the generator writes an extension as allOf, which
// Swagger UI shows as `(any & object)`; this way User is a plain object.
export const UserSchema = z.object({
  ...AccountSchema.shape,
  createdAt: z.string().openapi({
    format: "date-time",
    description: "ISO 8601 in UTC with milliseconds",
    example: "2026-11-25T21:07:00.123Z",
  }),
}).openapi("User");

export const OkSchema = z.object({ ok: z.literal(true) }).openapi("Ok");

const dateTime = (description: string, example: string) =>
  z.string().openapi({ format: "date-time", description, example });

export const DisabledSchema = z.object({
  reason: z.string().nullable().openapi({
    description: "Why, as the admin gave it; null without one",
    example: "Left the company",
  }),
  until: dateTime(
    "When the disable ends by itself (ISO 8601 in UTC with milliseconds); null: until enabled",
    "2026-12-31T00:00:00.000Z",
  ).nullable(),
  since: dateTime(
    "When the user was disabled (ISO 8601 in UTC with milliseconds)",
    "2026-11-25T21:07:00.123Z",
  ),
}).openapi("Disabled");

/** One user as `GET /api/users/{id}` answers: the list's fields and the account's state. */
export const UserDetailSchema = z.object({
  ...UserSchema.shape,
  disabled: DisabledSchema.nullable().openapi({
    description:
      "Null while the user may sign in (never disabled, enabled again, or the disable's `until` has passed)",
  }),
  lastLoginAt: dateTime(
    "The last successful login (ISO 8601 in UTC with milliseconds); null before the first",
    "2026-11-26T08:30:00.000Z",
  ).nullable(),
  mfa: MfaSummarySchema,
  ...profileDetailShape(),
}).openapi("UserDetail");

/** The body of a disable: every issue is the contract's one message. */
export const DisableUserSchema = z.object({
  reason: z.string({ error: MSG.invalidBody })
    // NUL and lone surrogates: PostgreSQL's text and jsonb (the audit
    // record's details) hold neither.
    .refine(
      (s) =>
        codePoints(s) <= 200 && !s.includes("\u0000") && !/\p{Cs}/u.test(s),
      { error: MSG.invalidBody },
    )
    .nullish()
    .openapi({
      maxLength: 200,
      description:
        "Why, at most 200 characters (Unicode code points; no NUL, no lone surrogate). Absent or `null`: no reason.",
      example: "Left the company",
    }),
  until: isoDateTime(MSG.invalidBody)
    .refine((s) => Date.parse(s) > Date.now(), { error: MSG.invalidBody })
    .nullish()
    .openapi({
      description:
        "ISO 8601 date and time with `Z` or an offset, in the future: the user is active again from then on, by itself. Absent or `null`: until enabled.",
      example: "2026-12-31T00:00:00Z",
    }),
}, { error: MSG.invalidBody }).openapi("DisableUser", {
  description:
    "Optional: a request without a body disables without reason or end. Unknown fields are ignored.",
});

export const SessionSchema = z.object({
  id: z.string().openapi({
    format: "uuid",
    description: "The session's public id (random; never its token)",
    example: "5b0e6a2c-8f0f-4a55-9f4e-2d9b8f3c1a77",
  }),
  createdAt: dateTime(
    "When the login made it",
    "2026-11-26T08:30:00.000Z",
  ),
  expiresAt: dateTime(
    "When it ends by itself",
    "2026-11-26T20:30:00.000Z",
  ),
  lastSeenAt: dateTime(
    "When a request last used it, to the minute (written at most once a minute); null until the first request after its login",
    "2026-11-26T09:12:00.000Z",
  ).nullable(),
  clientAddress: z.string().nullable().openapi({
    description:
      "The login's client address, as the login throttle sees it; null for a session opened by an older release",
    example: "203.0.113.7",
  }),
  userAgent: z.string().nullable().openapi({
    description:
      "The login's User-Agent, cut to 256 characters; null when none was sent",
    example: "Mozilla/5.0 (X11; Linux x86_64)",
  }),
  current: z.boolean().openapi({
    description: "True for the session of the request itself",
    example: false,
  }),
}).openapi("Session");

export const EndedSchema = z.object({
  ok: z.literal(true),
  ended: z.number().int().openapi({
    description: "How many live sessions ended",
    example: 2,
  }),
}).openapi("SessionsEnded");

/** `{id}`: a user's id, as the contract's integer (also under /api/users/{id}/keys). */
export const IdParam = z.object({ id: idParam("id", 2) });

/** A session's public id: a UUID (any case), lower case; null for anything else. */
const parseSessionId = (s: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
    ? s.toLowerCase()
    : null;

const SessionParams = z.object({
  id: IdParam.shape.id,
  sessionId: z.string()
    .openapi({
      param: { name: "sessionId", in: "path" },
      type: "string",
      format: "uuid",
      example: "5b0e6a2c-8f0f-4a55-9f4e-2d9b8f3c1a77",
    }),
});

const PASSWORD_DOC =
  "At least 8 characters (Unicode code points) and at most 72 bytes as UTF-8, bcrypt's limit; no NUL (U+0000), at which bcrypt would stop reading. Never trimmed.";

/**
 * The password's limits as the document states them: 8 code points at
 * least, and (72 bytes holding at most 72 code points) 72 at most, a bound
 * the byte rule tightens. Documentation only: the runtime rules, with the
 * contract's messages and check order, are account-rules.ts's.
 */
const PASSWORD_LENGTHS = { minLength: 8, maxLength: 72 };

/** The account rules (account-rules.ts) with their OpenAPI description. */
const account = NewAccountSchema.shape;

export const CreateUserSchema = z.object({
  username: account.username.openapi({
    description:
      "Unique under its canonical form (Unicode NFKC_Casefold: NFKC with full case folding, so `Alice`, `ＡＬＩＣＥ` and `𝐚𝐥𝐢𝐜𝐞` are one name, and `STRASSE` and `straße`) and under its UTS #39 confusable skeleton, taken regardless of case (all-Cyrillic `ѕсоре` is `scope`, `alıce` is `alice`): 409 when another user's matches. " +
      "At most 64 characters (Unicode code points), no control characters; no invisible or formatting characters (Unicode Cc, Cf, Zl, Zp, Co, Cn) " +
      "and no mix of confusable scripts (UTS #39 highly restrictive: Latin with Cyrillic or Greek is refused, Latin with Han, kana or Hangul is fine). Trimmed.",
    maxLength: 64,
    example: "alice",
  }),
  name: account.name.openapi({
    description:
      "At most 200 characters; no control characters (U+0000 to U+001F, U+007F to U+009F: NUL, tab, CR, LF among them), line or paragraph separators (U+2028, U+2029). Trimmed.",
    maxLength: 200,
    example: "Alice Example",
  }),
  email: account.email.openapi({
    description:
      "Unique under its canonical form and its confusable skeleton, like the username. At most 254 characters, one `@` with text on both sides, no whitespace, control or invisible characters. Trimmed.",
    maxLength: 254,
    example: "alice@example.com",
  }),
  password: account.password.openapi({
    description: PASSWORD_DOC,
    ...PASSWORD_LENGTHS,
    example: "correct horse",
  }),
  role: z.enum(ROLES, {
    error: (issue) =>
      issue.input == null || issue.input === ""
        ? MSG.allFieldsRequired
        : MSG.roleMustBeAdminOrViewer,
  }).openapi({ example: "viewer" }),
  ...profileBodyShape(),
}, { error: MSG.allFieldsRequired }).openapi("CreateUser", {
  description:
    "The contract's five fields are required; the profile's (`department`) are optional. Unknown fields are ignored; `null` counts as missing.",
});

/**
 * A field PATCH may leave out: absent, `null`, empty or whitespace alone
 * leave it as it is; anything else meets the create's rules.
 */
const unlessEmpty = <S extends z.ZodType<string, string>>(
  rules: S,
  doc: { maxLength: number; description: string; example: string },
) =>
  z.string({ error: MSG.invalidBody }).trim()
    .transform((s) => s === "" ? undefined : s)
    .pipe(rules.optional())
    .nullish()
    .openapi({ type: "string", ...doc });

export const UpdateUserSchema = z.object({
  role: z.enum([...ROLES, ""], { error: MSG.invalidRole }).nullish()
    .openapi({
      description: "New role. Absent, `null` or empty leaves it unchanged.",
      example: "admin",
    }),
  password: passwordRules(z.string({ error: MSG.invalidBody })).nullish()
    .openapi({
      // Empty is allowed (unchanged), so no minLength; see PASSWORD_LENGTHS.
      maxLength: PASSWORD_LENGTHS.maxLength,
      description:
        `New password; it ends the user's other sessions. ${PASSWORD_DOC} Absent, \`null\` or empty leaves it unchanged.`,
      example: "a new passphrase",
    }),
  name: unlessEmpty(nameRules(z.string()), {
    maxLength: 200,
    description:
      "New name, with the create's rules. Absent, `null` or empty leaves it unchanged.",
    example: "Alice Example",
  }),
  email: unlessEmpty(emailRules(z.string()), {
    maxLength: 254,
    description:
      "New e-mail, with the create's rules: 409 when another user's matches (canonical form or look-alike). Absent, `null` or empty leaves it unchanged.",
    example: "alice@example.com",
  }),
  ...profileBodyShape(),
}, { error: MSG.invalidBody }).openapi("UpdateUser");

const tags = ["users"];

/** The profile's rules (src/accounts/fields.ts), as the routes list checks. */
const PROFILE_CHECKS = PROFILE_MESSAGES.map(({ message, when }) =>
  check(400, message, when)
);

/** A text query parameter: 1..max characters, no NUL (no stored text holds one). */
const textParam = (max: number) =>
  z.string().refine(
    (s) => codePoints(s) >= 1 && codePoints(s) <= max && !s.includes("\u0000"),
  );

/**
 * The list's optional parameters, in the order they are checked. A bad
 * value answers 400 `Invalid query parameter: <name>` (after 401/403);
 * unknown parameters are ignored; a repeated one is a bad value.
 */
// No `example`s on these: Swagger UI's "Try it out" would fill them in,
// so a plain "list users" there would send a search.
export const ListQuerySchema = z.object({
  limit: z.string()
    .regex(/^[0-9]{1,4}$/)
    .transform(Number)
    .refine((n) => n >= 1 && n <= 1000)
    .optional()
    .openapi({
      type: "integer",
      minimum: 1,
      maximum: 1000,
      description:
        'At most this many users, in list order. When more match, the answer\'s `Link` header names the next page (`rel="next"`). Without it every match is returned.',
    }),
  after: z.string()
    .transform((cursor, ctx) => {
      const position = decodeCursor(cursor);
      if (!position) {
        ctx.addIssue({ code: "custom", message: "not a cursor of a link" });
        return z.NEVER;
      }
      return position;
    })
    .optional()
    .openapi({
      type: "string",
      description:
        "The opaque cursor of a `next` link: continue after that user. Only ever take it from a link.",
    }),
  role: z.enum(ROLES).optional()
    .openapi({ description: "Only users with this role." }),
  status: z.enum(["active", "disabled"]).optional().openapi({
    description:
      "`disabled`: only users disabled now; `active`: only users who may sign in (a disable whose `until` has passed counts as active).",
  }),
  q: textParam(100).optional().openapi({
    minLength: 1,
    maxLength: 100,
    description:
      "1..100 characters: users whose username, name or e-mail contains it, compared after Unicode NFKC and lower case, so case does not matter.",
  }),
  username: textParam(254).optional().openapi({
    minLength: 1,
    maxLength: 254,
    description:
      "Exact lookup under the canonical key that makes usernames unique (`Alice` finds `alice`, `STRASSE` finds `straße`): an array of zero or one user.",
  }),
  email: textParam(254).optional().openapi({
    minLength: 1,
    maxLength: 254,
    description:
      "Exact lookup under the canonical key that makes e-mails unique: an array of zero or one user.",
  }),
});

const ETAG_HEADER = {
  ETag: textHeader(
    "Strong entity tag of this answer; send it as `If-None-Match` to get 304 while nothing changed.",
  ),
};

const IfNoneMatch = z.object({
  "if-none-match": z.string().optional().openapi({
    description:
      "An `ETag` from an earlier answer: 304 without a body while it is still current.",
  }),
});

const IfMatch = z.object({
  "if-match": z.string().optional().openapi({
    description:
      "The user's `ETag` (from `GET /api/users/{id}`), or `*`: the write happens only if the user is still at that version, else 412 `Precondition failed`.",
  }),
});

const notModified = {
  304: {
    description:
      "Not modified: `If-None-Match` holds the current tag. No body; the `ETag` is repeated.",
    headers: ETAG_HEADER,
  },
};

/** Checked in the write itself, after the id. */
const preconditionFailed = check(
  412,
  MSG.preconditionFailed,
  "`If-Match` names another version of the user: it changed since it was read",
);

export const userNotFound = check(
  404,
  MSG.userNotFound,
  "no user has the id (also for ids that cannot exist)",
);

/** `{id}` as a user's id: 404 for what cannot be one (`abc`, `1.5`, `-1`, out of range). */
export const userId = pathParam("id", parseUserId, userNotFound);

/** 400 when `{id}` is the caller's own, decided before any lookup (a bad id cannot be the caller's). */
const notSelf = (
  message: typeof MSG.cannotDeleteSelf | typeof MSG.cannotDisableSelf,
) =>
  guards([
    check(
      400,
      message,
      "the id is the caller's own (decided before any lookup)",
    ),
  ], (c) =>
    parseUserId(c.req.param("id") ?? "") === c.get("caller").account.id
      ? errorResponse(c, 400, message)
      : undefined);

/** 404 unless the user of `{id}` exists: a lookup the contract makes before reading the body. */
export const userExists = load(
  "found",
  userNotFound,
  (store, got) => store.users.get(got.id as number),
);

/** Making someone an admin (creating one, or a role change to admin) steps up; known only once the body is read. */
const makingAdmin = stepUp(
  "`role` is `admin`, the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
  (got) => (got.body as { role?: string | null }).role === "admin",
);

const RECHECK =
  "The caller is checked again inside the write's transaction: one deleted, logged out or demoted meanwhile gets 401 or 403, so two admins deleting or demoting each other at once never both succeed.";

export const list = adminRoute({
  operationId: "listUsers",
  method: "get",
  path: "/api/users",
  tags,
  summary: "List users",
  description:
    "Without parameters: every user, oldest first (ties by id), in one response, however many and however slowly the client reads (it is streamed; a failure after the first byte ends the transfer unfinished, never as a complete array). " +
    "Parameters page (`limit`, `after` with the `Link` header's `next`), filter (`role`, `status`, `q`) and look up (`username`, `email`); they combine, and answers stay arrays of the same users. " +
    "A list read in several statements (a long list, a page walk) shows each user at most once and every user that existed throughout; see docs/api.md in the repository. " +
    "Every 200 carries an `ETag` that changes whenever any user is created, changed or deleted (on any instance); `If-None-Match` with it answers 304 while nothing changed.",
  request: { headers: IfNoneMatch },
  responses: {
    200: json(z.array(UserSchema), "The users asked for, oldest first", {
      ...ETAG_HEADER,
      Link: textHeader(
        '`</api/users?...&after=CURSOR>; rel="next"` (RFC 8288) when `limit` cut the answer short: the same query, continued.',
      ),
    }),
    ...notModified,
  },
  steps: [query(ListQuerySchema), failure(MSG.listFailed)],
});

export const get = adminRoute({
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
    outcome("not_found", userNotFound),
    outcome("precondition_failed", preconditionFailed),
    failure(MSG.deleteFailed),
  ],
});

export const disable = adminRoute({
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
    outcome("not_found", userNotFound),
    failure(MSG.disableFailed),
  ],
});

export const enable = adminRoute({
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
    outcome("not_found", userNotFound),
    failure(MSG.enableFailed),
  ],
});

export const listSessions = adminRoute({
  operationId: "listSessions",
  method: "get",
  path: "/api/users/{id}/sessions",
  tags,
  summary: "A user's live sessions",
  description:
    "The sessions that still let the user in, newest first: never a token, `current` marks the caller's own.",
  request: { params: IdParam },
  responses: {
    200: json(z.array(SessionSchema), "The user's live sessions, newest first"),
  },
  steps: [
    userId,
    outcome("not_found", userNotFound),
    failure(MSG.listSessionsFailed),
  ],
});

export const endSessions = adminRoute({
  operationId: "endSessions",
  method: "delete",
  path: "/api/users/{id}/sessions",
  tags,
  summary: "End all of a user's sessions",
  description:
    "Ends every session of the user (the caller's own too, when the id is theirs): their next request answers 401. Recorded as `sessions.ended` `{count}` when any ended. " +
    RECHECK,
  request: { params: IdParam },
  responses: {
    200: json(EndedSchema, "Ended; `ended` counts the live sessions ended"),
  },
  steps: [
    userId,
    outcome("user_not_found", userNotFound),
    failure(MSG.endSessionsFailed),
  ],
});

export const endSession = adminRoute({
  operationId: "endSession",
  method: "delete",
  path: "/api/users/{id}/sessions/{sessionId}",
  tags,
  summary: "End one of a user's sessions",
  description: "Recorded as `sessions.ended` `{count: 1}`. " +
    RECHECK,
  request: { params: SessionParams },
  responses: {
    200: json(EndedSchema, "Ended (`ended` is 1)"),
  },
  steps: [
    userId,
    // A session id that is no UUID is passed on as null: no session has
    // it, answered after the user's own 404.
    pathParam("sessionId", parseSessionId),
    outcome("user_not_found", userNotFound),
    outcome(
      "session_not_found",
      check(
        404,
        MSG.sessionNotFound,
        "the user has no live session of this public id (also for another user's session, and an id that is no UUID)",
      ),
    ),
    failure(MSG.endSessionsFailed),
  ],
});
