import { z } from "@hono/zod-openapi";
import { AUDIT_ACTIONS } from "../audit/actions.ts";
import { AuditRecordSchema } from "../audit/audit.routes.ts";
import { adminRoute } from "../auth/guards.ts";
import { idParam } from "../http/id-param.ts";
import { MSG } from "../http/messages.ts";
import {
  bodyTooLarge,
  check,
  failure,
  json,
  textHeader,
} from "../http/openapi.ts";
import { body, outcome, pathParam, query } from "../http/steps.ts";
import { OkSchema } from "../users/users.schemas.ts";
import { parseUserId } from "../users/user.ts";

export const DELIVERIES_LIMIT_DEFAULT = 100;
const DELIVERIES_LIMIT_MAX = 1000;

const invalid = { error: MSG.invalidWebhook };

const TARGET_RULE =
  "`http` or `https`, at most 2048 characters, no user name or password. Only globally routable unicast addresses that are not the service host's own are allowed, unless the service runs with `WEBHOOK_ALLOW_PRIVATE=true`: loopback, private (RFC 1918, ULA fc00::/7), link-local (169.254.0.0/16, fe80::/10, the metadata addresses 169.254.169.254 and fd00:ec2::254), CGNAT (100.64.0.0/10), unspecified, multicast, broadcast, reserved, benchmarking and documentation addresses are refused, and so are IPv6 addresses that carry an IPv4 address (IPv4-mapped, -translated and -compatible, 6to4, NAT64, Teredo). The rule applies written as an IP address (in any form the URL parser reads as one, such as `http://2130706433/`), at creation (400); as a host name, at each delivery, on every address the name resolves to (the attempt fails and is retried). Redirects are not followed.";

export const CreateWebhookSchema = z.object({
  url: z.string(invalid).min(1, invalid).max(2048, invalid).openapi({
    description: `Where records are POSTed. ${TARGET_RULE}`,
    maxLength: 2048,
    example: "https://hooks.example.com/user-admin",
  }),
  actions: z.array(z.enum(AUDIT_ACTIONS, invalid), invalid).min(1, invalid)
    .nullish().openapi({
      description:
        "Only records of these actions are delivered; absent or `null`: every action.",
      example: ["user.created", "user.deleted"],
    }),
  description: z.string(invalid).max(500, invalid).nullish().openapi({
    description: "A note for people, at most 500 characters.",
    maxLength: 500,
    example: "Directory sync",
  }),
}, invalid).openapi("CreateWebhook", {
  description: "Unknown fields are ignored; `null` counts as absent.",
});

export const WebhookSchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  url: z.string().openapi({ example: "https://hooks.example.com/user-admin" }),
  actions: z.array(z.enum(AUDIT_ACTIONS)).nullable().openapi({
    description: "The actions delivered; null: every action.",
  }),
  description: z.string().nullable(),
  createdAt: z.string().openapi({
    format: "date-time",
    example: "2026-11-25T21:07:00.123Z",
  }),
  status: z.enum(["active", "disabled"]).openapi({
    description:
      "`disabled` once an undelivered record kept failing for the whole retry budget (3 days); `POST /api/webhooks/{id}/enable` resumes delivery.",
  }),
  disabledAt: z.string().nullable().openapi({ format: "date-time" }),
  lastRecordId: z.number().int().openapi({
    description:
      "The last audit record passed: delivered, or not of its actions. The next record of its actions after it is the one being delivered.",
    example: 41,
  }),
  failures: z.number().int().openapi({
    description: "Failed attempts at the record being delivered.",
  }),
  nextAttemptAt: z.string().nullable().openapi({
    format: "date-time",
    description: "When that record is tried again, while it is failing.",
  }),
  health: z.enum(["healthy", "failing", "disabled"]).openapi({
    description:
      "`disabled` as `status`; `failing` while attempts at the record being delivered fail (`failures` of them, in a row, `lastError` the newest's reason); `healthy` otherwise.",
  }),
  lastError: z.string().nullable().openapi({
    description:
      "Why the newest failed attempt at a record failed (its `error`, or `HTTP <status>`), while `failing` or `disabled`; null when healthy.",
    example: "HTTP 503",
  }),
  lastDeliveredAt: z.string().nullable().openapi({
    format: "date-time",
    description:
      "The newest successful attempt kept (a record or a test event); null when none is.",
  }),
}).openapi("Webhook");

export const CreatedWebhookSchema = z.object({
  ...WebhookSchema.shape,
  secret: z.string().openapi({
    description:
      "The signing secret: `whsec_` + base64 of 32 random bytes. Shown in this answer only; keep it to verify deliveries.",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  }),
}).openapi("CreatedWebhook");

export const DeliveryAttemptSchema = z.object({
  id: z.number().int(),
  type: z.enum(["record", "webhook.test"]).openapi({
    description:
      "`record`: an audit record; `webhook.test`: a test event (`POST /api/webhooks/{id}/test`), sent once, never retried",
  }),
  recordId: z.number().int().nullable().openapi({
    description: "The audit record delivered; null for a test event",
  }),
  attempt: z.number().int().openapi({
    description: "1 for the first attempt at the record, then 2, 3, ...",
  }),
  at: z.string().openapi({ format: "date-time" }),
  outcome: z.enum(["delivered", "failed", "pending"]).openapi({
    description: "`pending`: a test event not sent yet",
  }),
  status: z.number().int().nullable().openapi({
    description: "The HTTP status answered; null when none came",
  }),
  error: z.string().nullable().openapi({
    description:
      "Why it failed (`HTTP status not 2xx`, `redirect not followed`, `address not allowed: ...`, a timeout, a connection error)",
  }),
  responseExcerpt: z.string().nullable().openapi({
    description: "At most the first 256 bytes of the response body",
  }),
  durationMs: z.number().int(),
}).openapi("DeliveryAttempt");

/** The message every delivery carries as its JSON body. */
export const WebhookMessageSchema = z.object({
  type: z.enum(AUDIT_ACTIONS).openapi({
    description: "The record's action",
  }),
  timestamp: z.string().openapi({
    format: "date-time",
    description: "The record's time",
  }),
  data: AuditRecordSchema,
}).openapi("WebhookMessage");

const IdParam = z.object({ id: idParam("id", 1) });

const DeliveriesQuery = z.object({
  limit: z.string().regex(/^[0-9]{1,4}$/).transform(Number)
    .refine((n) => n >= 1 && n <= DELIVERIES_LIMIT_MAX).optional().openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: DELIVERIES_LIMIT_MAX,
      default: DELIVERIES_LIMIT_DEFAULT,
      description: "At most this many attempts, the newest.",
    }),
});

const tags = ["webhooks"];
const notFound = check(
  404,
  MSG.webhookNotFound,
  "no webhook has the id (also for ids that cannot exist)",
);

/** `{id}` as a webhook's id (ids are the integers users' are). */
const webhookId = pathParam("id", parseUserId, notFound);

/** The webhook's id, and the store's answer when no webhook has it. */
const existing = [webhookId, outcome("not_found", notFound)] as const;

export const create = adminRoute({
  permission: "webhooks:manage",
  operationId: "createWebhook",
  method: "post",
  path: "/api/webhooks",
  tags,
  summary: "Register a webhook endpoint",
  description:
    "Every audit record sealed after this call (of `actions`, when given) is then POSTed to `url` as a `WebhookMessage` signed per the Standard Webhooks specification: " +
    "`webhook-id` (`msg_<endpoint id>_<record id>`, the same on every attempt), `webhook-timestamp` (seconds), `webhook-signature` (`v1,` + base64 of HMAC-SHA256 over `id.timestamp.body` keyed with the secret's base64-decoded bytes). " +
    "Delivery is at least once, in record order: a 2xx within 10 s counts; a record that fails holds back the later ones and is retried after about 5 s, 1 min, 5 min, 30 min, 2 h, then every 6 h, for 3 days, after which the endpoint is disabled (`webhook.disabled` in the trail). " +
    "Answers the `secret` once. Recorded as `webhook.created`.",
  responses: {
    201: json(
      CreatedWebhookSchema,
      "Created; the only answer with the secret",
      {
        Location: textHeader("/api/webhooks/{id} of the new endpoint"),
      },
    ),
  },
  steps: [
    body(CreateWebhookSchema, [
      bodyTooLarge,
      check(
        400,
        MSG.invalidWebhook,
        "the body breaks a rule, a body that is not JSON included",
      ),
    ]),
    outcome(
      "target_refused",
      check(
        400,
        MSG.invalidWebhook,
        "the URL's target is refused (`url` says which are allowed)",
      ),
    ),
    outcome(
      "too_many",
      check(
        400,
        MSG.tooManyWebhooks,
        "100 webhook endpoints exist (in all, whoever made them)",
      ),
    ),
    failure(MSG.webhookCreateFailed),
  ],
});

export const list = adminRoute({
  permission: "webhooks:manage",
  operationId: "listWebhooks",
  method: "get",
  path: "/api/webhooks",
  tags,
  summary: "List webhook endpoints",
  description: "Every endpoint, oldest first, without secrets.",
  responses: {
    200: json(z.array(WebhookSchema), "The endpoints"),
  },
  steps: [failure(MSG.webhookListFailed)],
});

export const get = adminRoute({
  permission: "webhooks:manage",
  operationId: "getWebhook",
  method: "get",
  path: "/api/webhooks/{id}",
  tags,
  summary: "Get one webhook endpoint",
  description: "The endpoint, without its secret.",
  request: { params: IdParam },
  responses: {
    200: json(WebhookSchema, "The endpoint"),
  },
  steps: [...existing, failure(MSG.webhookGetFailed)],
});

export const remove = adminRoute({
  permission: "webhooks:manage",
  operationId: "deleteWebhook",
  method: "delete",
  path: "/api/webhooks/{id}",
  tags,
  summary: "Delete a webhook endpoint",
  description:
    "Delivery to it stops; its attempts are deleted with it. Recorded as `webhook.deleted`.",
  request: { params: IdParam },
  responses: {
    200: json(OkSchema, "Deleted"),
  },
  steps: [...existing, failure(MSG.webhookDeleteFailed)],
});

export const deliveries = adminRoute({
  permission: "webhooks:manage",
  operationId: "listWebhookDeliveries",
  method: "get",
  path: "/api/webhooks/{id}/deliveries",
  tags,
  summary: "A webhook endpoint's delivery attempts, newest first",
  description:
    `The newest \`limit\` attempts (default ${DELIVERIES_LIMIT_DEFAULT}); attempts older than \`WEBHOOK_ATTEMPT_RETENTION_DAYS\` (default 30) are removed.`,
  request: { params: IdParam },
  responses: {
    200: json(z.array(DeliveryAttemptSchema), "Attempts, newest first"),
  },
  steps: [
    query(DeliveriesQuery),
    ...existing,
    failure(MSG.webhookDeliveriesFailed),
  ],
});

export const enable = adminRoute({
  permission: "webhooks:manage",
  operationId: "enableWebhook",
  method: "post",
  path: "/api/webhooks/{id}/enable",
  tags,
  summary: "Enable a disabled webhook endpoint",
  description:
    "Delivery resumes at once from the record it was held at, with a fresh retry budget. An endpoint that is active is answered unchanged. Recorded as `webhook.enabled` when it was disabled.",
  request: { params: IdParam },
  responses: {
    200: json(WebhookSchema, "The endpoint, active"),
  },
  steps: [...existing, failure(MSG.webhookEnableFailed)],
});

export const WebhookTestSchema = z.object({
  deliveryId: z.number().int().openapi({
    description:
      "The test event's delivery: its attempt in `GET /api/webhooks/{id}/deliveries` (`type` `webhook.test`), `pending` until sent",
    example: 812,
  }),
}).openapi("WebhookTest");

export const test = adminRoute({
  permission: "webhooks:manage",
  operationId: "testWebhook",
  method: "post",
  path: "/api/webhooks/{id}/test",
  tags,
  summary: "Send a test event to a webhook endpoint",
  description:
    'Queues one `webhook.test` message for this endpoint alone, which the delivery worker sends within `WEBHOOK_POLL_MS` as it sends records (signed with the endpoint\'s secret, `webhook-id` `msg_<endpoint id>_test_<delivery id>`, body `{type: "webhook.test", timestamp, data: {webhookId, deliveryId}}`), once: it is not retried and holds back no record. A disabled endpoint is sent it too, to check a receiver before enabling it. While one waits, asking again answers that one. Not recorded in the audit trail.',
  request: { params: IdParam },
  responses: {
    202: json(WebhookTestSchema, "Queued"),
  },
  steps: [...existing, failure(MSG.webhookTestFailed)],
});

export const retry = adminRoute({
  permission: "webhooks:manage",
  operationId: "retryWebhook",
  method: "post",
  path: "/api/webhooks/{id}/retry",
  tags,
  summary: "Retry a failing webhook delivery now",
  description:
    "The record an active endpoint is failing at (`health` `failing`) is tried again now, by the delivery worker within `WEBHOOK_POLL_MS`, instead of at `nextAttemptAt`; the retry budget still runs from its first failure. Delivery is in record order, so only that record can be retried. A disabled endpoint resumes with `POST /api/webhooks/{id}/enable`.",
  request: { params: IdParam },
  responses: {
    200: json(WebhookSchema, "The endpoint, its record due now"),
  },
  steps: [
    ...existing,
    outcome(
      "nothing_to_retry",
      check(
        409,
        MSG.nothingToRetry,
        "the endpoint is not failing at a record (healthy, or disabled: enable it instead)",
      ),
    ),
    failure(MSG.webhookRetryFailed),
  ],
});
