import { z } from "@hono/zod-openapi";
import { adminRoute } from "../auth/guards.ts";
import { MSG } from "../http/messages.ts";
import { failure, json } from "../http/openapi.ts";

const count = (description: string) =>
  z.number().int().openapi({ description, example: 3 });

const UserCountsSchema = z.object({
  total: count("Every user"),
  admins: count("Users whose role is `admin`"),
  disabled: count("Users disabled now (a disable that ran out not counted)"),
  unenrolledAdmins: count("Admins without a second factor"),
}).openapi("OverviewUsers");

const SignInDaySchema = z.object({
  date: z.string().openapi({
    description: "The day in UTC",
    example: "2026-11-25",
  }),
  succeeded: count("`login.succeeded` records of the day"),
  failed: count("`login.failed` records of the day"),
}).openapi("OverviewSignInDay");

const WebhookHealthSchema = z.object({
  id: z.number().int().openapi({ example: 1 }),
  url: z.string().openapi({ example: "https://hooks.example.com/user-admin" }),
  health: z.enum(["ok", "failing", "disabled", "idle"]).openapi({
    description:
      "`disabled`: its retry budget ran out (`POST /api/webhooks/{id}/enable` resumes it); `failing`: the record being delivered has failed and is retried; `ok`: the last attempt delivered; `idle`: no attempt yet",
  }),
  lastAttemptAt: z.string().nullable().openapi({
    format: "date-time",
    description: "The last delivery attempt; null when none was made",
  }),
}).openapi("OverviewWebhook");

export const OverviewSchema = z.object({
  users: UserCountsSchema,
  signIns: z.union([z.array(SignInDaySchema), z.null()]).openapi({
    description:
      "The last 14 days (UTC), oldest first, today last, days without sign-ins included; null when the caller lacks `audit:read`",
  }),
  webhooks: z.union([z.array(WebhookHealthSchema), z.null()]).openapi({
    description:
      "Every webhook endpoint, oldest first; null when the caller lacks `webhooks:manage`",
  }),
}).openapi("Overview");

export const get = adminRoute({
  permission: "users:read",
  operationId: "getOverview",
  method: "get",
  path: "/api/overview",
  tags: ["overview"],
  summary: "Counts of users, sign-ins per day, webhook health",
  description: "What the console's overview shows, read on each request. " +
    "A section needing a permission the caller lacks is null, not refused: `signIns` needs `audit:read`, `webhooks` needs `webhooks:manage`.",
  responses: { 200: json(OverviewSchema, "The overview") },
  steps: [failure(MSG.overviewFailed)],
});
