import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createKeyHandlers, type KeyDeps } from "./api-keys.handlers.ts";
import * as routes from "./api-keys.routes.ts";

/** /api/users/{id}/keys: each route as keys.routes.ts declares it, answered by keys.handlers.ts. */
export function mountKeys(
  app: OpenAPIHono<AppEnv>,
  deps: KeyDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createKeyHandlers(deps), steps);
}
