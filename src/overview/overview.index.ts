import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import {
  createOverviewHandlers,
  type OverviewDeps,
} from "./overview.handlers.ts";
import * as routes from "./overview.routes.ts";

/** /api/overview: the route as overview.routes.ts declares it, answered by overview.handlers.ts. */
export function mountOverview(
  app: OpenAPIHono<AppEnv>,
  deps: OverviewDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createOverviewHandlers(deps), steps);
}
