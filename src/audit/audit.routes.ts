import { z } from "@hono/zod-openapi";
import { adminRoute } from "../auth/guards.ts";
import { MSG } from "../http/messages.ts";
import { storableInstant } from "../http/time.ts";
import { errorResponse } from "../http/errors.ts";
import { check, failure, json, textHeader } from "../http/openapi.ts";
import { outcome, passes, query as queryStep } from "../http/steps.ts";
import { parseUserId, USER_ID_MAX } from "../users/user.ts";
import { AUDIT_ACTIONS } from "./actions.ts";
import { VIAS } from "./chain.ts";

export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1000;
/** Record ids stay far below this (2^53 - 1: exact in JSON numbers). */
const RECORD_ID_MAX = Number.MAX_SAFE_INTEGER;

const query = (name: string) => ({ param: { name, in: "query" as const } });

/** A decimal integer in 1..max, written plainly (no sign, point or exponent). */
const integer = (max: number) =>
  z.string().regex(/^[0-9]{1,16}$/).transform(Number)
    .refine((n) => n >= 1 && n <= max);

const userId = z.string().transform(parseUserId)
  .refine((id) => id !== null).transform((id) => id!);

/** `actorId` / `targetId`: a user id, documented as the integer it is. */
const userIdParam = (name: string, party: "actor" | "target") =>
  userId.optional().openapi({
    ...query(name),
    type: "integer",
    minimum: 1,
    maximum: USER_ID_MAX,
    description: `Only records whose ${party} has this user id.`,
  });
/**
 * ISO 8601: a date and time with `Z` or an offset (fractions allowed), or a
 * date alone (midnight UTC), in the years PostgreSQL holds once in UTC.
 */
const instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()])
  .transform((s, ctx) => {
    const time = new Date(s);
    if (!storableInstant(time)) {
      ctx.addIssue({ code: "custom", message: "outside the years 0001..9999" });
      return z.NEVER;
    }
    return time.toISOString();
  });

/**
 * What `instant` takes, as the document says it: not `format: date-time`,
 * which would leave out the date alone. The pattern is the syntax; a date
 * that does not exist (`2026-02-30`) is refused as well.
 */
const INSTANT_DOC = {
  type: "string" as const,
  pattern:
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))?$",
};
const INSTANT_RULE =
  "An RFC 3339 date-time with `Z` or an offset (`2026-11-25T10:00:00Z`, `2026-11-25T12:00:00.5+02:00`; upper-case `T` and `Z`), or a date alone (`2026-11-25`, midnight UTC), within the years 0001..9999 once in UTC. Anything else answers 400.";

/**
 * The query parameters, in the order they are checked: when several are
 * bad, the first is named.
 */
export const AuditQuerySchema = z.object({
  limit: integer(AUDIT_LIMIT_MAX).optional().openapi({
    ...query("limit"),
    type: "integer",
    minimum: 1,
    maximum: AUDIT_LIMIT_MAX,
    default: AUDIT_LIMIT_DEFAULT,
    description: "At most this many records.",
  }),
  before: integer(RECORD_ID_MAX).optional().openapi({
    ...query("before"),
    type: "integer",
    minimum: 1,
    description:
      "Only records with a smaller id: the cursor that the `next` link carries.",
  }),
  action: z.enum(AUDIT_ACTIONS).optional().openapi({
    ...query("action"),
    description: "Only records of this action.",
  }),
  actorId: userIdParam("actorId", "actor"),
  targetId: userIdParam("targetId", "target"),
  since: instant.optional().openapi({
    ...query("since"),
    ...INSTANT_DOC,
    description: `Only records at or after this time. ${INSTANT_RULE}`,
    example: "2026-11-25T00:00:00Z",
  }),
  until: instant.optional().openapi({
    ...query("until"),
    ...INSTANT_DOC,
    description: `Only records before this time (exclusive). ${INSTANT_RULE}`,
    example: "2026-11-26",
  }),
});

const PartySchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  username: z.string().openapi({
    description: "The username at the time of the record",
    example: "admin",
  }),
  keyId: z.number().int().optional().openapi({
    description:
      "Actors only: the API key the request came with (absent for a session)",
    example: 7,
  }),
}).openapi("AuditParty");

// A union, not `.nullable()`: the generator writes a nullable reference as
// the bare `$ref` (null lost) and a described one as `allOf`, which SDK
// generators type as `AuditParty & unknown`; this is `anyOf: [$ref, null]`.
const nullableParty = z.union([PartySchema, z.null()]);

export const AuditRecordSchema = z.object({
  id: z.number().int().openapi({
    description: "Increasing with every record, without gaps",
    example: 42,
  }),
  time: z.string().openapi({
    format: "date-time",
    description: "ISO 8601 in UTC with milliseconds",
    example: "2026-11-25T21:07:00.123Z",
  }),
  action: z.enum(AUDIT_ACTIONS),
  actor: nullableParty.openapi({
    description:
      "Who did it; null for the service itself (the first admin at startup, a disable that ran out), the recovery task, failed, throttled or refused logins, and a SCIM connection's writes (`via` `scim`, the connection in `details.connection`)",
  }),
  target: nullableParty.openapi({
    description:
      "Whom it concerns; null for a login attempt with an unknown username, whose attempted name is not kept",
  }),
  details: z.record(z.string(), z.unknown()).openapi({
    description:
      "Per action: `user.created` {role}; `user.role_changed` {from, to}; `login.failed` {reason: wrong_password | unknown_user}; `login.throttled` {retryAfter}; `admin.bootstrapped` {source: environment | generated}; `admin.recovered` {outcome: created | reset}; `login.refused` {reason: disabled}; `user.disabled` {reason, until} (each null when not given); `user.enabled` {expired: true} when a disable ran out (no actor), else {}; `sessions.ended` {count}; `key.created`, `key.revoked` {keyId, name} (`key.created` with `reachGroupId` for a key limited to a group's members), `key.revoked` {keyId, name, reason: minter removed} when the key's minter was deleted, disabled or demoted, and {keyId, name, reason: group deleted} when the group the key was limited to was; `webhook.created`, `webhook.deleted`, `webhook.enabled` {webhookId, url}; `webhook.disabled` {webhookId, url, heldRecordId}; `scim.user_linked` {connection: {id, name}}: a provisioning connection took over an existing user on its first write to them (`url`: the origin and path alone, never a query, fragment or user info); else {}",
    example: { from: "viewer", to: "admin" },
  }),
  requestId: z.string().nullable().openapi({
    description: "The request's X-Request-Id; null outside a request",
  }),
  clientAddress: z.string().nullable().openapi({
    description:
      "The client's address as the login throttle sees it; null outside a request",
    example: "203.0.113.7",
  }),
  via: z.enum(VIAS).nullable().openapi({
    description:
      "The door it came through: `api` (the HTTP API, the console included, with a session or a key), `scim` (a SCIM connection's write), `import` (an import job's records); null for the service itself (the first admin at startup, housekeeping such as a disable that ran out, the recovery task, a webhook endpoint given up on)",
    example: "api",
  }),
}).openapi("AuditRecord");

export const list = adminRoute({
  permission: "audit:read",
  operationId: "listAuditEvents",
  method: "get",
  path: "/api/audit",
  tags: ["audit"],
  summary: "The audit trail, newest first",
  description:
    "Every account change and authentication event, newest first, in pages of `limit` (default 100). " +
    'When older records follow, the answer carries `Link: </api/audit?...&before=ID>; rel="next"` with the same filters. ' +
    "Records form a hash chain (each holds the SHA-256 of the previous record and of its own content) that `deno task audit:verify` checks; " +
    "records older than `AUDIT_RETENTION_DAYS` (default 365, 0 keeps all) are removed. " +
    "Never a password, hash or token.",
  responses: {
    200: json(z.array(AuditRecordSchema), "Records, newest first", {
      Link: textHeader(
        'When older records follow: `</api/audit?...&before=ID>; rel="next"`',
      ),
    }),
  },
  steps: [queryStep(AuditQuerySchema), failure(MSG.auditListFailed)],
});

/** A record id as the feed's cursor: 0 (before the first) or more. */
const cursor = z.string().regex(/^[0-9]{1,16}$/).transform(Number)
  .refine((n) => n <= RECORD_ID_MAX);

/** `Last-Event-ID` or `after`: a record id written plainly, 0 or more. */
export const parseCursor = (text: string): number | undefined => {
  const parsed = cursor.safeParse(text);
  return parsed.success ? parsed.data : undefined;
};

const actionList = z.array(z.enum(AUDIT_ACTIONS)).min(1);

/** The feed's query parameters, in the order they are checked. */
export const AuditStreamQuerySchema = z.object({
  after: cursor.optional().openapi({
    ...query("after"),
    type: "integer",
    minimum: 0,
    description:
      "Only records with a larger id, oldest first (0: from the first record kept). `Last-Event-ID`, when sent, takes its place. Without either, only records sealed from now on.",
  }),
  // One value arrives as a string, several as an array.
  action: z.preprocess(
    (v) => typeof v === "string" ? [v] : v,
    actionList,
  ).optional().openapi({
    param: { name: "action", in: "query", style: "form", explode: true },
    description:
      "Only records of these actions (repeat the parameter for several: `?action=user.created&action=user.deleted`).",
  }),
});

/**
 * Where the client resumes: `Last-Event-ID` when sent (400 when it is not a
 * record id), else the query's `after`; undefined for only new records.
 */
const resumeAfter = passes<"after", number | undefined>("after", [
  check(
    400,
    MSG.invalidLastEventId,
    "`Last-Event-ID` is not a record id (0 or more, written plainly)",
  ),
], (c, { got }) => {
  const lastEventId = c.req.header("last-event-id");
  if (lastEventId === undefined) {
    return (got.query as { after?: number }).after;
  }
  return parseCursor(lastEventId.trim()) ??
    errorResponse(c, 400, MSG.invalidLastEventId);
});

export const stream = adminRoute({
  permission: "audit:read",
  operationId: "streamAuditEvents",
  method: "get",
  path: "/api/audit/stream",
  tags: ["audit"],
  summary: "The audit trail as a live feed (Server-Sent Events)",
  description:
    "Every sealed audit record as one Server-Sent Event (`id:` the record id, `event:` the action, `data:` the record's JSON as `GET /api/audit` answers it), oldest first: " +
    "after `Last-Event-ID` or `after` when given, else only records sealed from now on. " +
    "A record written on any instance reaches every open stream within a second. " +
    "A comment line (`:`) comes every 15 s (`AUDIT_STREAM_HEARTBEAT_MS`) when nothing else does. " +
    "A client that stops reading is dropped once more than 1 MiB waits for it; it resumes with `Last-Event-ID`, as an EventSource does by itself. " +
    "The stream ends within 5 s once its session ends or its user is no longer an admin, and when the instance shuts down. " +
    "Records removed by `AUDIT_RETENTION_DAYS` cannot be resumed from: an `after` below the id of the last record removed answers 410 (`after=0` streams from the first record while none was removed).",
  request: {
    headers: z.object({
      // A header is text: documented as a string of digits, so that
      // generated clients take the string an EventSource keeps.
      "Last-Event-ID": z.string().optional().openapi({
        param: { name: "Last-Event-ID", in: "header" },
        type: "string",
        pattern: "^[0-9]{1,16}$",
        example: "41",
        description:
          "The id of the last event received: the stream resumes after it (in place of `after`).",
      }),
    }),
  },
  responses: {
    200: {
      description:
        "The stream: `retry: 1000` and `id:` its starting position (the last event id a reconnect sends when no record came yet), then one event per record (`id: 42`, `event: user.created`, `data: {...}`, a blank line) and comment lines, until it ends",
      content: {
        "text/event-stream": {
          schema: z.string().openapi({
            example:
              'retry: 1000\nid: 41\n\nid: 42\nevent: user.role_changed\ndata: {"id":42,"time":"2026-11-25T21:07:00.123Z","action":"user.role_changed","actor":{"id":1,"username":"admin"},"target":{"id":7,"username":"bob"},"details":{"from":"viewer","to":"admin"},"requestId":"4f1c2a9e-12","clientAddress":"203.0.113.7","via":"api"}\n\n:\n\n',
          }),
        },
      },
    },
  },
  steps: [
    queryStep(AuditStreamQuerySchema),
    resumeAfter,
    outcome(
      "history_gone",
      check(
        410,
        MSG.eventHistoryGone,
        "records after `after` (or `Last-Event-ID`) were removed by the retention sweep",
      ),
    ),
    outcome(
      "too_many_streams",
      check(
        429,
        MSG.tooManyStreams,
        "the caller's user has 100 streams open on this instance (one must end first)",
      ),
    ),
    failure(MSG.auditStreamFailed),
  ],
});
