/**
 * The account's optional profile fields, each defined once: its column, its
 * wire name (in `/api` bodies, exports and imports), its rule and message,
 * and where SCIM carries it. The routes' schemas, the detail's projection,
 * the write path, SCIM's user resource, the export and the import judge all
 * read this list, so a new optional field is one entry here and a migration.
 *
 * The identity fields (username, name, e-mail) have rules of their own
 * (src/users/account-rules.ts) and keys beside them (canonical and
 * look-alike), so they are not entries here.
 */
import { z } from "@hono/zod-openapi";
import { type Message, MSG } from "../http/messages.ts";
import { codePoints } from "../users/account-rules.ts";

/**
 * The password hash of an account without a usable password (provisioned
 * by SCIM or imported without one): no scheme's form, so no password
 * matches it; a login checks against a dummy bcrypt hash instead, and so
 * costs what any login costs (src/auth/passwords.ts).
 */
export const NO_PASSWORD = "!";

export interface ProfileField {
  /** In `/api` bodies and details, export lines and import records. */
  readonly wire: string;
  /** The users table's column. */
  readonly column: string;
  /** At most this many characters (Unicode code points), trimmed. */
  readonly maxLength: number;
  /** The 400 of a value past maxLength. */
  readonly tooLong: Message;
  /** Where a SCIM body carries it: an attribute of the enterprise user extension. */
  readonly scim: {
    readonly extension: "enterprise";
    readonly attribute: string;
  };
  /** For the OpenAPI document. */
  readonly description: string;
  readonly example: string;
}

export const PROFILE_FIELDS = [
  {
    wire: "department",
    column: "department",
    maxLength: 100,
    tooLong: MSG.departmentTooLong,
    scim: { extension: "enterprise", attribute: "department" },
    description:
      "The user's department. Optional: at most 100 characters, no control characters; trimmed; `null` or empty clears it.",
    example: "Finance",
  },
] as const satisfies readonly ProfileField[];

export type ProfileName = (typeof PROFILE_FIELDS)[number]["wire"];

/** The profile as stored: each field a value or null (unset). */
export type Profile = Record<ProfileName, string | null>;

/** A change of the profile: only the fields given (null clears one). */
export type ProfileChange = Partial<Profile>;

const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /\p{Cs}/u;

/** Text PostgreSQL can hold and a person can read: no control character, no lone surrogate. */
const readable = (s: string) => !CONTROL.test(s) && !LONE_SURROGATE.test(s);

/**
 * A field's value as given (after trimming): "" and whitespace alone clear
 * it, as `null` does. Undefined for a value the field's rule refuses,
 * `tooLong` for one too long.
 */
export function profileValue(
  field: ProfileField,
  value: unknown,
): string | null | "invalid" | "tooLong" {
  if (value === null) return null;
  if (typeof value !== "string") return "invalid";
  const trimmed = value.trim();
  if (trimmed === "") return null;
  if (!readable(trimmed)) return "invalid";
  return codePoints(trimmed) > field.maxLength ? "tooLong" : trimmed;
}

/**
 * A field as a route's body takes it: optional, `null` or empty clears it;
 * past its length its own message, anything but readable text
 * `Invalid request body`.
 */
const fieldSchema = (field: ProfileField) =>
  z.string({ error: MSG.invalidBody })
    .refine((s) => profileValue(field, s) !== "invalid", {
      error: MSG.invalidBody,
      abort: true,
    })
    .refine((s) => profileValue(field, s) !== "tooLong", {
      error: field.tooLong,
      abort: true,
    })
    .transform((s) => profileValue(field, s) as string | null)
    .nullish()
    .openapi({
      type: ["string", "null"],
      maxLength: field.maxLength,
      description: field.description,
      example: field.example,
    });

/** The profile fields of a POST or PATCH body (each optional). */
export const profileBodyShape = () =>
  Object.fromEntries(
    PROFILE_FIELDS.map((f) => [f.wire, fieldSchema(f)]),
  ) as { [K in ProfileName]: ReturnType<typeof fieldSchema> };

/** The profile fields of a detail (each string or null). */
export const profileDetailShape = () =>
  Object.fromEntries(
    PROFILE_FIELDS.map((f) => [
      f.wire,
      z.string().nullable().openapi({
        description: `${f.description.split(".")[0]}; null when unset.`,
        example: f.example,
      }),
    ]),
  ) as { [K in ProfileName]: z.ZodNullable<z.ZodString> };

/** The profile fields of an import's record: each optional, its rule as a body's. */
export const profileRecordShape = () =>
  Object.fromEntries(
    PROFILE_FIELDS.map((f) => [
      f.wire,
      z.string().nullable().optional().openapi({
        maxLength: f.maxLength,
        description: f.description,
        example: f.example,
      }),
    ]),
  ) as {
    [K in ProfileName]: z.ZodOptional<z.ZodNullable<z.ZodString>>;
  };

/** The messages of the profile's rules, in their order (after the password's). */
export const PROFILE_MESSAGES = PROFILE_FIELDS.map((f) => ({
  message: f.tooLong,
  when: `\`${f.wire}\` is longer than ${f.maxLength} characters once trimmed`,
}));

/** A body's profile fields that it gives (absent ones left out). */
export const profileGiven = (
  body: Partial<Record<ProfileName, string | null | undefined>>,
): ProfileChange =>
  Object.fromEntries(
    PROFILE_FIELDS.filter((f) => body[f.wire] !== undefined)
      .map((f) => [f.wire, body[f.wire] ?? null]),
  );

/**
 * Where an account came from, and who keeps it now: what the detail
 * (`source`, `scim`) and the list's `include=state` items (`source`) show.
 * The store reads them (src/db/user-rows.ts) only from these shapes.
 *
 * - `scim`: a provisioning connection owns it (created it or took it over);
 *   `id` and `name` are the connection's. A deleted connection's users
 *   still say `scim`.
 * - `sso`: created at its first sign-in through an identity provider
 *   (`id`, `name`: the provider's).
 * - `import`: created by an import (`id`: the import's; `name` null).
 * - `api`: anything else (the API, the console, the first admin).
 */
export const SOURCE_TYPES = ["scim", "sso", "import", "api"] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export interface Source {
  type: SourceType;
  id: number | null;
  name: string | null;
}

/** A user a live provisioning connection owns: its identity provider sets their role. */
export interface ScimLink {
  connection: { id: number; name: string };
  externalId: string | null;
  groups: { id: number; displayName: string }[];
}

export const sourceSchema = () =>
  z.object({
    type: z.enum(SOURCE_TYPES),
    id: z.number().int().nullable().openapi({
      description:
        "The connection's, provider's or import's id; null for `api`",
      example: 3,
    }),
    name: z.string().nullable().openapi({
      description:
        "The connection's or provider's name; null for `import` and `api`",
      example: "Okta",
    }),
  }).openapi("UserSource", {
    description:
      "Where the user came from: `scim` (a provisioning connection owns them), `sso` (created at a first sign-in through an identity provider), `import`, or `api` (anything else).",
  });

export const scimLinkSchema = () =>
  z.object({
    connection: z.object({
      id: z.number().int().openapi({ example: 3 }),
      name: z.string().openapi({ example: "Okta" }),
    }),
    externalId: z.string().nullable().openapi({
      description: "The identity provider's id of the user, as it sent it",
      example: "00u1abcd",
    }),
    groups: z.array(z.object({
      id: z.number().int().openapi({ example: 7 }),
      displayName: z.string().openapi({ example: "User Admins" }),
    })).openapi({
      description: "The connection's groups the user is a member of, by name",
    }),
  }).openapi("UserScimLink", {
    description:
      "The live provisioning connection that owns the user: its identity provider sets their role from its groups (a role changed here is set back on its next write).",
  });
