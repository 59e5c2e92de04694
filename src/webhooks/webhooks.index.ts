import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import {
  createWebhookHandlers,
  type WebhookDeps,
} from "./webhooks.handlers.ts";
import * as routes from "./webhooks.routes.ts";

/** /api/webhooks: each route as webhooks.routes.ts declares it, answered by webhooks.handlers.ts. */
export function mountWebhooks(
  app: OpenAPIHono<AppEnv>,
  deps: WebhookDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createWebhookHandlers(deps), steps);
  // The message each delivery POSTs, in the document's `webhooks` section.
  app.openAPIRegistry.registerWebhook({
    method: "post",
    path: "auditRecord",
    operationId: "receiveAuditRecord",
    tags: ["webhooks"],
    // The receiver authenticates the message by its signature.
    security: [],
    summary: "An audit record, delivered to a registered endpoint",
    description:
      "Sent per the Standard Webhooks specification (verify it with the `standardwebhooks` library and the endpoint's secret): headers `webhook-id`, `webhook-timestamp`, `webhook-signature`. Answer 2xx within 10 s; anything else (a 3xx included) is retried.",
    request: {
      headers: z.object({
        "webhook-id": z.string().openapi({
          description:
            "`msg_<endpoint id>_<record id>`: the same on every attempt at one record; deduplicate by it",
        }),
        "webhook-timestamp": z.string().openapi({
          description: "Seconds since the epoch when the attempt was signed",
        }),
        "webhook-signature": z.string().openapi({
          description:
            "`v1,` + base64 of HMAC-SHA256 over `webhook-id.webhook-timestamp.body`, keyed with the base64-decoded secret after `whsec_`",
        }),
      }),
      body: {
        required: true,
        content: {
          "application/json": { schema: routes.WebhookMessageSchema },
        },
      },
    },
    responses: {
      200: { description: "Any 2xx: delivered" },
    },
  });
}
