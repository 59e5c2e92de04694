import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { type AuthDeps, createAuthHandlers } from "./auth.handlers.ts";
import * as routes from "./auth.routes.ts";
import { createOwnSessionHandlers } from "./own-sessions.handlers.ts";
import * as ownSessionRoutes from "./own-sessions.routes.ts";

/**
 * /api/auth: each route as auth.routes.ts declares it, answered by
 * auth.handlers.ts; then the caller's own sessions (own-sessions.*.ts).
 */
export function mountAuth(
  app: OpenAPIHono<AppEnv>,
  deps: AuthDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createAuthHandlers(deps), steps);
  mountAll(app, ownSessionRoutes, createOwnSessionHandlers(deps), steps);
}
