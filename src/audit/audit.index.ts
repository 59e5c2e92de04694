import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { type AuditDeps, createAuditHandlers } from "./audit.handlers.ts";
import * as routes from "./audit.routes.ts";

/** /api/audit and its feed: the routes as audit.routes.ts declares them, answered by audit.handlers.ts. */
export function mountAudit(
  app: OpenAPIHono<AppEnv>,
  deps: AuditDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createAuditHandlers(deps), steps);
}
