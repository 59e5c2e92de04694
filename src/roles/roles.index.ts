import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createRoleHandlers, type RoleDeps } from "./roles.handlers.ts";
import * as routes from "./roles.routes.ts";

/** /api/roles and /api/assignments: each route as roles.routes.ts declares it, answered by roles.handlers.ts. */
export function mountRoles(
  app: OpenAPIHono<AppEnv>,
  deps: RoleDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createRoleHandlers(deps), steps);
}
