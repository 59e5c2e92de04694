import { profileRecordShape } from "../accounts/fields.ts";
import { z } from "@hono/zod-openapi";
import { adminRoute, stepUp } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import { check, failure, json, textHeader } from "../http/openapi.ts";
import { guards, outcome, pathParam, query } from "../http/steps.ts";
import { errorResponse } from "../http/errors.ts";
import { parseUserId } from "../users/user.ts";
import { UserDetailSchema } from "../users/users.schemas.ts";
import {
  FilterQueryShape,
  ListQuerySchema,
} from "../users/list-query.schemas.ts";
import { IMPORTER_NOT_ALLOWED } from "../db/imports.ts";
import { IMPORT_LIMITS, type ImportFormat } from "./read.ts";

const tags = ["users"];

const HASH_FORMATS =
  "bcrypt (`$2a$`, `$2b$`, `$2y$`, cost at most 14), argon2id and argon2i (PHC `$argon2id$v=19$m=,t=,p=$salt$hash`, at most 128 MiB and memory times passes at most 1 GiB), scrypt (PHC `$scrypt$ln=,r=,p=$salt$hash`, N·r·p at most 2^20, memory 128·r·(N + 2 + p) bytes at most 129 MiB, N below 2^(16·r)), PBKDF2-SHA256 (PHC `$pbkdf2-sha256$i=,l=$salt$hash`, passlib's `$pbkdf2-sha256$<rounds>$salt$hash`, Django's `pbkdf2_sha256$<iterations>$salt$hash`, iterations times the key's 32-byte blocks at most 2,000,000), Firebase scrypt as Supabase Auth writes it (`$fbscrypt$v=1,n=<mem_cost>,r=<rounds>,p=1,ss=<salt separator>,sk=<signer key>$<salt>$<hash>`, base64, bounded as scrypt)";

export const ImportRecordSchema = z.object({
  username: z.string().openapi({ example: "alice" }),
  name: z.string().openapi({ example: "Alice Example" }),
  email: z.string().openapi({ example: "alice@example.com" }),
  role: z.enum(["admin", "viewer"]).optional().openapi({
    description: "Default `viewer`",
  }),
  password: z.string().optional().openapi({
    description:
      "A plain password, hashed with bcrypt (bcrypt-bound: give hashes for speed). Not with `passwordHash`.",
  }),
  passwordHash: z.string().optional().openapi({
    description:
      `A hash kept as given and checked at login by its algorithm; the first successful login replaces it with bcrypt (\`password.upgraded\` \`{from}\`). Formats: ${HASH_FORMATS}. Anything else, or a work factor over these ceilings (over about a second to check): \`Unsupported password hash\`. Neither \`password\` nor \`passwordHash\`: the user cannot log in with a password until one is set.`,
    example:
      "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$lB0dmV8d3XhKDN1MK0vmNY5gmlbe7xB4Emq+zZI8Rmk",
  }),
  externalId: z.string().nullable().optional().openapi({
    description: "The user's id in the system it comes from, as given",
  }),
  createdAt: z.string().optional().openapi({
    format: "date-time",
    description: "When the user was created there (ISO 8601); default now",
  }),
  disabled: UserDetailSchema.shape.disabled.optional(),
  ...profileRecordShape(),
}).openapi("ImportRecord", {
  description:
    "One line of NDJSON, or one CSV row under a header naming these fields (CSV: `disabled` is `true` or `false`). A line of `GET /api/users/export` is accepted as is: `id` and `lastLoginAt` are ignored, `disabled` applied. `null` or empty counts as absent; unknown fields are ignored. Each record is checked as `POST /api/users` checks a body, with its messages.",
});

export const ImportStatusSchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  status: z.enum(["queued", "running", "finished", "failed", "cancelled"])
    .openapi({
      description:
        "`failed`: the job broke off (what was written stays); `cancelled`: stopped by `POST /api/imports/{id}/cancel`",
    }),
  total: z.number().int().openapi({ description: "Records in the body" }),
  processed: z.number().int().openapi({
    description: "Records judged so far",
  }),
  created: z.number().int(),
  updated: z.number().int(),
  skipped: z.number().int(),
  failed: z.number().int().openapi({
    description: "Records refused (see the errors)",
  }),
  startedAt: z.string().nullable().openapi({ format: "date-time" }),
  finishedAt: z.string().nullable().openapi({ format: "date-time" }),
  error: z.string().nullable().openapi({
    description:
      `Why a \`failed\` import broke off, when it is not a fault of the service: \`${IMPORTER_NOT_ALLOWED}\` when its uploader lost the right to import before it ended (their key revoked or expired, their session ended, no longer an admin, disabled or deleted: checked when the upload ends and before each batch); otherwise \`null\``,
    example: null,
  }),
}).openapi("ImportStatus");

export const ImportAcceptedSchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  status: z.literal("queued"),
}).openapi("ImportAccepted");

export const ImportErrorSchema = z.object({
  line: z.number().int().openapi({
    description:
      "The record's line in the file, counted from 1 (a CSV header is line 1; a CSV record spanning lines is numbered by its first)",
    example: 3,
  }),
  error: z.string().openapi({
    description:
      "The message `POST /api/users` answers for such a body (a name the file gave before: `Username or email already exists`); `Invalid request body` for a line that is no JSON object, not UTF-8, longer than 64 KiB, or a CSV record with another number of fields than its header or over 64 KiB (its quoted lines included); `Unsupported password hash`",
    example: "Email must be a valid address",
  }),
}).openapi("ImportError");

const ImportQuerySchema = z.object({
  dryRun: z.enum(["true", "false"]).transform((v) => v === "true").optional()
    .openapi({
      type: "boolean",
      description:
        "Judge every record and count what would be created, updated and skipped, writing nothing (a name given twice in the file is only found within a batch of 2,000 lines)",
    }),
  onConflict: z.enum(["fail", "skip", "update"]).optional().openapi({
    description:
      "A record whose username or e-mail another user already has: `fail` (default) refuses it (`Username or email already exists`), `skip` counts it skipped, `update` writes the fields it gives over the user of that username as `PATCH /api/users/{id}` and the disable endpoints change an account (absent optional fields stay; a new password or hash ends the user's sessions but the uploader's own; a disable ends them all; demoting or disabling an admin revokes the keys they minted for others)",
  }),
});

const MEDIA: Record<string, ImportFormat> = {
  "application/x-ndjson": "ndjson",
  "text/csv": "csv",
};

/** The body's format by its Content-Type (parameters such as `charset` aside). */
export const formatOf = (contentType: string | undefined) =>
  MEDIA[(contentType ?? "").split(";")[0].trim().toLowerCase()];

const importNotFound = check(
  404,
  MSG.importNotFound,
  "no import has the id (also for ids that cannot exist)",
);
const importId = pathParam("id", parseUserId, importNotFound);
const IdParam = z.object({ id: idParam("id", 1) });

export const create = adminRoute({
  permission: "users:import",
  admin: true,
  operationId: "createImport",
  method: "post",
  path: "/api/imports",
  tags,
  summary: "Import users",
  description: `Up to ${
    IMPORT_LIMITS.records.toLocaleString("en")
  } records as NDJSON (\`application/x-ndjson\`) or CSV (\`text/csv\`, header row), streamed into the database as they arrive (no request deadline applies to the upload; at most ${
    IMPORT_LIMITS.bytes / 1024 ** 3
  } GiB). The answer comes once the body is stored: the job then runs on any instance, survives restarts and resumes, creating each user once; follow it with \`GET /api/imports/{id}\`. Any record may make an admin or change one (\`role\`, and \`onConflict=update\`), so a caller with a second factor steps up first, as for making an admin through \`/api/users\`. The uploader is checked again when the body is in and before each batch, as every write re-checks its caller: one who lost the right to import meanwhile (key revoked or expired, session ended, no longer an admin, disabled or deleted) is answered 401 or 403 and the job ends \`failed\` with \`error\` \`${IMPORTER_NOT_ALLOWED}\`, writing nothing more. Each created user gets its \`user.created\` record, and a user an update changes the records the same change through \`/api/users\` gets (\`user.updated\` \`{changed}\` for name, e-mail and \`externalId\`, \`user.role_changed\`, \`user.disabled\`, \`user.enabled\`, \`user.password_reset\`, and \`key.revoked\` for the keys a demoted or disabled admin minted for others); the import is recorded as \`import.started\` and \`import.finished\` \`{counts}\`. See docs/migrating.md in the repository.`,
  request: {
    body: {
      required: true,
      content: {
        "application/x-ndjson": { schema: ImportRecordSchema },
        "text/csv": { schema: z.string() },
      },
    },
  },
  responses: {
    202: json(ImportAcceptedSchema, "Stored and queued", {
      Location: textHeader("/api/imports/{id}"),
    }),
  },
  steps: [
    stepUp(),
    guards(
      [
        check(
          415,
          MSG.importContentType,
          "the Content-Type is neither `application/x-ndjson` nor `text/csv`",
        ),
      ],
      (c) =>
        formatOf(c.req.header("content-type"))
          ? undefined
          : errorResponse(c, 415, MSG.importContentType),
    ),
    query(ImportQuerySchema),
    outcome(
      "too_large",
      check(
        413,
        MSG.bodyTooLarge,
        `the body is over ${
          IMPORT_LIMITS.bytes / 1024 ** 3
        } GiB (declared or read) or holds more than ${
          IMPORT_LIMITS.records.toLocaleString("en")
        } records: nothing is imported`,
      ),
    ),
    failure(MSG.importFailed),
  ],
});

export const get = adminRoute({
  permission: "users:import",
  operationId: "getImport",
  method: "get",
  path: "/api/imports/{id}",
  tags,
  summary: "An import's progress",
  description: "Its status and counts, as they stand.",
  request: { params: IdParam },
  responses: { 200: json(ImportStatusSchema, "The import") },
  steps: [
    importId,
    outcome("not_found", importNotFound),
    failure(MSG.importGetFailed),
  ],
});

export const cancel = adminRoute({
  permission: "users:import",
  operationId: "cancelImport",
  method: "post",
  path: "/api/imports/{id}/cancel",
  tags,
  summary: "Stop an import",
  description:
    "A queued or running import stops after the batch under way; the users it created stay. An import at its end is answered as it is. Recorded as `import.finished` with status `cancelled`.",
  request: { params: IdParam },
  responses: { 200: json(ImportStatusSchema, "The import, stopped") },
  steps: [
    importId,
    outcome("not_found", importNotFound),
    failure(MSG.importCancelFailed),
  ],
});

export const errors = adminRoute({
  permission: "users:import",
  operationId: "listImportErrors",
  method: "get",
  path: "/api/imports/{id}/errors",
  tags,
  summary: "An import's refused records",
  description:
    "Every refused record so far, in line order (streamed, however many).",
  request: { params: IdParam },
  responses: {
    200: json(z.array(ImportErrorSchema), "The refused records"),
  },
  steps: [
    importId,
    outcome("not_found", importNotFound),
    failure(MSG.importErrorsFailed),
  ],
});

export const ExportedUserSchema = z.object({
  ...UserDetailSchema.omit({ disabled: true, lastLoginAt: true }).shape,
  disabled: UserDetailSchema.shape.disabled,
  lastLoginAt: UserDetailSchema.shape.lastLoginAt,
  externalId: z.string().nullable().openapi({
    description:
      "The user's id in the system it comes from: the one an import gave, else the one an identity provider gave through SCIM (the first connection's when several did)",
  }),
  passwordHash: z.string().optional().openapi({
    description:
      "Only with `include=passwordHash`: the hash as stored (`!` for a user without a password)",
  }),
}).openapi("ExportedUser");

const ExportQuerySchema = z.object({
  include: z.literal("passwordHash").optional().openapi({
    description:
      "`passwordHash`: each line carries the user's password hash (recorded as `users.exported` `{passwordHashes: true}`)",
  }),
  ...FilterQueryShape,
  ids: z.string()
    .regex(/^[0-9]{1,10}(,[0-9]{1,10}){0,999}$/)
    .transform((s) => s.split(",").map(parseUserId))
    .refine((ids) => ids.every((id) => id !== null))
    .transform((ids) => ids as number[])
    .optional()
    .openapi({
      type: "string",
      description:
        "Only these users: 1..1000 user ids, comma-separated (an export of a selection); ids of no user are skipped.",
    }),
  sort: ListQuerySchema.shape.sort,
});

export const exportUsers = adminRoute({
  permission: "users:export",
  operationId: "exportUsers",
  method: "get",
  path: "/api/users/export",
  tags,
  summary: "Export every user as NDJSON",
  description:
    "One JSON object a line, every user in list order (oldest first, or as `sort` orders it, as the list takes it), streamed however many. `POST /api/imports` takes it back as it is. The list's filters (`role`, `status`, `q`) and `ids` narrow it to the users they match. Recorded as `users.exported` `{count, passwordHashes}` (`count`: the users matched) before the first line.",
  responses: {
    200: {
      description: "Every user, one a line",
      content: { "application/x-ndjson": { schema: ExportedUserSchema } },
    },
  },
  steps: [
    query(ExportQuerySchema),
    stepUp(
      "`include=passwordHash`, the caller has a second factor and their session has not passed it within `MFA_STEP_UP_SECONDS` (see `POST /api/auth/step-up`; API keys are exempt)",
      (got) => (got.query as { include?: string }).include === "passwordHash",
    ),
    failure(MSG.exportFailed),
  ],
});
