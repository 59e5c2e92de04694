import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createGroupHandlers, type GroupDeps } from "./groups.handlers.ts";
import * as routes from "./groups.routes.ts";

/** /api/groups: each route as groups.routes.ts declares it, answered by groups.handlers.ts. */
export function mountGroups(
  app: OpenAPIHono<AppEnv>,
  deps: GroupDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createGroupHandlers(deps), steps);
}
