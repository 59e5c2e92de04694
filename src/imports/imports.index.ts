import type { OpenAPIHono } from "@hono/zod-openapi";
import { NO_DEADLINE } from "../db/write.ts";
import { mountAll } from "../http/endpoint.ts";
import type { Deadline } from "../http/request.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import { createImportHandlers, type ImportDeps } from "./imports.handlers.ts";
import * as routes from "./imports.routes.ts";

/**
 * /api/imports and /api/users/export, as imports.routes.ts declares them.
 * Mounted before /api/users, so that `/api/users/export` is not taken for
 * a user's id.
 */
export function mountImports(
  app: OpenAPIHono<AppEnv>,
  deps: ImportDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createImportHandlers(deps), steps);
}

/**
 * The request deadline, but for an import's upload: a body of a million
 * records takes longer than any request may, and is bounded by its size
 * instead (IMPORT_LIMITS). Its writes begin whenever the body allows.
 */
export const exceptImportUploads =
  (deadline: Deadline): Deadline => (c, serve) => {
    if (c.req.method === "POST" && c.req.path === routes.create.path) {
      c.set("writeBy", NO_DEADLINE);
      // A plain call, not an async wrapper around every request's deadline.
      return Promise.resolve(serve(c));
    }
    return deadline(c, serve);
  };
