import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createUserHandlers, type UserDeps } from "./users.handlers.ts";
import * as routes from "./users.routes.ts";

/** /api/users: each route as users.routes.ts declares it, answered by users.handlers.ts. */
export function mountUsers(
  app: OpenAPIHono<AppEnv>,
  deps: UserDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createUserHandlers(deps), steps);
}
