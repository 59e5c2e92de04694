import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createMfaHandlers, type MfaDeps } from "./mfa.handlers.ts";
import * as routes from "./mfa.routes.ts";

/** Second factors: each route as mfa.routes.ts declares it, answered by mfa.handlers.ts. */
export function mountMfa(
  app: OpenAPIHono<AppEnv>,
  deps: MfaDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createMfaHandlers(deps), steps);
}
