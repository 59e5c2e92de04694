/**
 * The users API's wire shapes: the account as it is shown, the bodies the
 * routes take, their parameters and headers (the list's query parameters
 * are list-query.schemas.ts's). The routes that use them are
 * users.routes.ts; other routes answer some of them too (an account, `ok`).
 */
import { z } from "@hono/zod-openapi";
import { idParam } from "../http/id-param.ts";
import { isoDateTime } from "../http/time.ts";
import { MSG } from "../http/messages.ts";
import { check, textHeader } from "../http/openapi.ts";
import { MfaSummarySchema } from "../mfa/mfa.schemas.ts";
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
  scimLinkSchema,
  sourceSchema,
} from "../accounts/fields.ts";
import { ROLES } from "./user.ts";

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

const SourceSchema = sourceSchema();

/** The account's state, as the detail and the list's `include=state` items show it. */
const stateShape = {
  disabled: DisabledSchema.nullable().openapi({
    description:
      "Null while the user may sign in (never disabled, enabled again, or the disable's `until` has passed)",
  }),
  lastLoginAt: dateTime(
    "The last successful login (ISO 8601 in UTC with milliseconds); null before the first",
    "2026-11-26T08:30:00.000Z",
  ).nullable(),
  source: SourceSchema,
};

/** One user as `GET /api/users/{id}` answers: the list's fields and the account's state. */
export const UserDetailSchema = z.object({
  ...UserSchema.shape,
  ...stateShape,
  mfa: MfaSummarySchema,
  scim: scimLinkSchema().nullable().openapi({
    description:
      "The live provisioning connection that owns the user, their `externalId` there and their groups in it; null when none does",
  }),
  ...profileDetailShape(),
}).openapi("UserDetail");

/** A list item: the user, and with `include=state` the account's state. */
export const UserListItemSchema = z.object({
  ...UserSchema.shape,
  disabled: stateShape.disabled.optional(),
  lastLoginAt: stateShape.lastLoginAt.optional(),
  mfaEnabled: z.boolean().optional().openapi({
    description: "Whether a login needs a second factor (one is enrolled)",
  }),
  source: SourceSchema.optional(),
}).openapi("UserListItem", {
  description:
    "A user as the list shows them: the fields of `User`, and with `include=state` also `disabled`, `lastLoginAt`, `mfaEnabled` and `source` (always all four).",
});

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
export const parseSessionId = (s: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)
    ? s.toLowerCase()
    : null;

export const SessionParams = z.object({
  id: IdParam.shape.id,
  sessionId: z.string()
    .openapi({
      param: { name: "sessionId", in: "path" },
      type: "string",
      format: "uuid",
      example: "5b0e6a2c-8f0f-4a55-9f4e-2d9b8f3c1a77",
    }),
});

export const PASSWORD_DOC =
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
    .openapi({ type: ["string", "null"], ...doc });

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

export const tags = ["users"];

/** The profile's rules (src/accounts/fields.ts), as the routes list checks. */
export const PROFILE_CHECKS = PROFILE_MESSAGES.map(({ message, when }) =>
  check(400, message, when)
);

export const ETAG_HEADER = {
  ETag: textHeader(
    "Strong entity tag of this answer; send it as `If-None-Match` to get 304 while nothing changed.",
  ),
};

export const IfNoneMatch = z.object({
  "if-none-match": z.string().optional().openapi({
    description:
      "An `ETag` from an earlier answer: 304 without a body while it is still current.",
  }),
});

export const IfMatch = z.object({
  "if-match": z.string().optional().openapi({
    description:
      "The user's `ETag` (from `GET /api/users/{id}`), or `*`: the write happens only if the user is still at that version, else 412 `Precondition failed`.",
  }),
});

export const notModified = {
  304: {
    description:
      "Not modified: `If-None-Match` holds the current tag. No body; the `ETag` is repeated.",
    headers: ETAG_HEADER,
  },
};
