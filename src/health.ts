import { type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Store } from "./db/store.ts";
import type { AppEnv } from "./http/env.ts";
import { mount } from "./http/endpoint.ts";
import { json, route } from "./http/openapi.ts";
import type { StepDeps } from "./http/steps.ts";

const HealthSchema = z.object({ status: z.enum(["ok", "unavailable"]) })
  .openapi("Health");

export const health = route({
  operationId: "health",
  method: "get",
  path: "/health",
  tags: ["service"],
  summary: "Whether the service and its database answer",
  description: "No authentication. For load balancers and monitoring.",
  security: [],
  responses: {
    200: json(HealthSchema, "The database answers"),
    503: json(HealthSchema, "The database does not answer"),
  },
  steps: [],
});

export const live = route({
  operationId: "healthLive",
  method: "get",
  path: "/health/live",
  tags: ["service"],
  security: [],
  summary: "Whether the process answers (liveness)",
  description:
    "No authentication, no database: 200 as long as the process serves HTTP. " +
    "For an orchestrator's liveness probe, which restarts the process when it fails; " +
    "a database outage does not make it fail, as restarting would not help.",
  responses: {
    200: json(HealthSchema, "The process answers"),
  },
  steps: [],
});

export const ready = route({
  operationId: "healthReady",
  method: "get",
  path: "/health/ready",
  tags: ["service"],
  security: [],
  summary: "Whether the service can serve requests (readiness)",
  description:
    "No authentication. 200 when the database answers, 503 when it does not (as `GET /health`). " +
    "For an orchestrator's readiness probe or a load balancer, which send no traffic to an instance answering 503.",
  responses: {
    200: json(HealthSchema, "The database answers"),
    503: json(HealthSchema, "The database does not answer"),
  },
  steps: [],
});

/**
 * `timeoutMs` bounds the ping below the request deadline, so a database that
 * does not answer (or a pool queue that does not move) reads as 503, not as
 * the deadline's 500.
 */
export function mountHealth(
  app: OpenAPIHono<AppEnv>,
  store: Store,
  timeoutMs: number,
  steps: StepDeps,
) {
  const check = async (c: Context<AppEnv>) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        store.ping(),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      return c.json({ status: "ok" as const }, 200);
    } catch (e) {
      c.get("log").warn("health check failed", {
        requestId: c.get("requestId"),
        cause: e,
      });
      return c.json({ status: "unavailable" as const }, 503);
    } finally {
      clearTimeout(timer);
    }
  };
  mount(app, health, check, steps);
  mount(app, ready, check, steps);
  mount(app, live, (c) => c.json({ status: "ok" as const }, 200), steps);
}
