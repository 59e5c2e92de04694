import type { Caller } from "../auth/caller.ts";
import { anyReach } from "../auth/permissions.ts";
import { z } from "@hono/zod-openapi";
import {
  adminRoute,
  keyWithinHeld,
  knownPermissions,
  outranked,
  stepUp,
} from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { isoDateTime } from "../http/time.ts";
import { MSG } from "../http/messages.ts";
import { bodyTooLarge, check, failure, json } from "../http/openapi.ts";
import { body, load, outcome, pathParam } from "../http/steps.ts";
import { codePoints } from "../users/account-rules.ts";
import { parseUserId } from "../users/user.ts";
import { userId, userNotFound } from "../users/user-steps.ts";
import { IdParam, OkSchema } from "../users/users.schemas.ts";

/** How far ahead a key's `expiresAt` may lie. */
export const KEY_LIFETIME_MAX_YEARS = 2;

const invalid = { error: MSG.apiKeyRequestInvalid };

const time = (description: string) =>
  z.string().openapi({
    format: "date-time",
    description,
    example: "2026-11-25T21:07:00.123Z",
  });

export const ApiKeySchema = z.object({
  id: z.number().int().openapi({ example: 7 }),
  name: z.string().openapi({ example: "billing-service" }),
  prefix: z.string().openapi({
    description:
      "`uak_` and the first 8 characters of the key: names it in lists and logs",
    example: "uak_Xq3kP0aZ",
  }),
  createdAt: time("ISO 8601 in UTC with milliseconds"),
  expiresAt: time("When the key stops working; null: never").nullable(),
  lastUsedAt: time(
    "When a request last came with the key, to the minute (written at most once a minute); null: never used",
  ).nullable(),
  createdBy: z.object({
    id: z.number().int().openapi({ example: 1 }),
    username: z.string().openapi({ example: "admin" }),
  }).openapi({
    description:
      "The admin who minted the key (its owner for a key made before keys recorded this), under their current username. A key minted for another user is revoked when its minter is deleted, disabled or demoted.",
  }),
  permissions: z.array(z.string()).optional().openapi({
    description:
      "The permissions the key may use; absent: all of its minter's. Whatever it lists, a request with the key holds only what its owner and its minter hold at that moment.",
    example: ["users:read"],
  }),
  reachGroupId: z.number().int().nullable().openapi({
    description:
      "The group whose members alone the key acts on, with each of its permissions that act on users (the others it does not carry); null: every user its owner and minter reach. Deleting the group revokes the key.",
    example: null,
  }),
}).openapi("ApiKey");

export const NewApiKeySchema = z.object({
  ...ApiKeySchema.shape,
  key: z.string().openapi({
    description:
      "The key: `uak_` and 43 base64url characters (256 random bits). Shown in this answer only (the service keeps its SHA-256): store it now. Send it as `Authorization: Bearer <key>`.",
    example: "uak_Xq3kP0aZ7bYc1dEf2gHi3jKl4mNo5pQr6sTu7vWx8yZ",
  }),
}).openapi("NewApiKey");

/** `expiresAt`: ISO 8601 with `Z` or an offset, in the future, at most two years ahead. */
const expiresAt = isoDateTime(MSG.apiKeyRequestInvalid)
  .transform((s, ctx) => {
    const at = new Date(s);
    const latest = new Date();
    latest.setUTCFullYear(latest.getUTCFullYear() + KEY_LIFETIME_MAX_YEARS);
    if (!(at.getTime() > Date.now() && at.getTime() <= latest.getTime())) {
      ctx.addIssue({ code: "custom", message: MSG.apiKeyRequestInvalid });
      return z.NEVER;
    }
    return at.toISOString();
  });

export const CreateApiKeySchema = z.object({
  name: z.string(invalid)
    .refine((s) => codePoints(s) >= 1 && codePoints(s) <= 100, invalid)
    .openapi({
      description:
        "1..100 characters (Unicode code points), as given: what the key is for.",
      minLength: 1,
      maxLength: 100,
      example: "billing-service",
    }),
  expiresAt: expiresAt.nullish().openapi({
    type: ["string", "null"],
    format: "date-time",
    description:
      "RFC 3339 date-time with `Z` or an offset, in the future and at most 2 years ahead. Absent or `null`: the key does not expire.",
    example: "2027-06-30T00:00:00Z",
  }),
  permissions: z.array(z.string(invalid), invalid).nullish().openapi({
    type: ["array", "null"],
    items: { type: "string" },
    description:
      "The permissions the key may use, each one the minter holds (src/auth/permissions.ts lists them). Absent or `null`: all of the minter's, now and as they change.",
    example: ["users:read"],
  }),
  reachGroupId: z.number(invalid).int(invalid).min(1, invalid)
    .max(2_147_483_647, invalid).nullish().openapi({
      type: ["integer", "null"],
      description:
        "A group (`GET /api/groups`): the key acts only on its members, as they are at each request, and carries only the permissions that act on users, each of which the minter must hold over that group. Absent or `null`: no such limit.",
      example: 5,
    }),
}, invalid).openapi("CreateApiKey", {
  description: "Unknown fields are ignored; `null` counts as missing.",
});

const KeyParams = z.object({
  id: IdParam.shape.id,
  keyId: idParam("keyId", 7),
});

const tags = ["keys"];

const USE =
  " Keys act as their owner with the owner's current role and roles, narrowed to the key's `permissions`, to the members of its `reachGroupId`, and to what its minter holds at each request: a service account is an ordinary user made for the purpose.";

const keyNotFound = check(
  404,
  MSG.apiKeyNotFound,
  "the user has no such live key (also for another user's key, a key revoked already, and ids that cannot exist)",
);

export const create = adminRoute({
  permission: "keys:manage",
  own: true,
  operationId: "createApiKey",
  method: "post",
  path: "/api/users/{id}/keys",
  tags,
  summary: "Create an API key for a user",
  description:
    "At most 100 live (unrevoked, unexpired) keys per user. The answer holds the key itself, the only time it is shown. Recorded in the audit trail as `key.created`." +
    USE,
  request: { params: IdParam },
  responses: {
    201: json(NewApiKeySchema, "Created; `key` is shown this once"),
  },
  steps: [
    stepUp(),
    userId,
    // The owner is looked up before the body is read.
    load(
      "owner",
      userNotFound,
      // Outside all the caller reaches, no user (the write decides by
      // the permission the request needs).
      (store, got) =>
        (got.caller as Caller).account.id === got.id
          ? store.apiKeys.userExists(got.id as number)
          : store.users.reached(
            got.id as number,
            anyReach((got.caller as Caller).access),
          ),
    ),
    body(CreateApiKeySchema, [
      bodyTooLarge,
      check(
        400,
        MSG.apiKeyRequestInvalid,
        "the body breaks a rule (`name` 1..100 characters, `expiresAt` in the future and at most 2 years ahead, `permissions` an array of strings, `reachGroupId` a positive integer), a body that is not JSON included",
      ),
    ]),
    knownPermissions,
    keyWithinHeld,
    outranked,
    outcome(
      "group_not_found",
      check(
        400,
        MSG.groupNotFound,
        "no group has `reachGroupId` (deleted, say)",
      ),
    ),
    outcome(
      "too_many",
      check(400, MSG.tooManyApiKeys, "the user has 100 live keys"),
    ),
    // Deleted between the lookup and the write.
    outcome("not_found", userNotFound),
    failure(MSG.apiKeyCreateFailed),
  ],
});

export const list = adminRoute({
  permission: "keys:manage",
  own: true,
  operationId: "listApiKeys",
  method: "get",
  path: "/api/users/{id}/keys",
  tags,
  summary: "List a user's API keys",
  description:
    "The user's keys that are not revoked (expired ones included, with their `expiresAt`), newest first. Never the key itself.",
  request: { params: IdParam },
  responses: {
    200: json(z.array(ApiKeySchema), "The keys, newest first"),
  },
  steps: [
    userId,
    outcome("not_found", userNotFound),
    failure(MSG.apiKeyListFailed),
  ],
});

export const revoke = adminRoute({
  permission: "keys:manage",
  own: true,
  operationId: "revokeApiKey",
  method: "delete",
  path: "/api/users/{id}/keys/{keyId}",
  tags,
  summary: "Revoke an API key",
  description:
    "The key stops working at once, on every instance (its next request answers 401), and leaves the list. Recorded as `key.revoked`. " +
    "To rotate without downtime: create the new key, deploy it, then revoke the old one.",
  request: { params: KeyParams },
  responses: {
    200: json(OkSchema, "Revoked"),
  },
  steps: [
    pathParam("id", parseUserId, keyNotFound),
    pathParam("keyId", parseUserId, keyNotFound),
    outranked,
    outcome("not_found", keyNotFound),
    failure(MSG.apiKeyRevokeFailed),
  ],
});
