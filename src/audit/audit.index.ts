import type { OpenAPIHono } from "@hono/zod-openapi";
import { mount } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { type AuditDeps, createAuditHandlers } from "./audit.handlers.ts";
import * as routes from "./audit.routes.ts";

/** /api/audit and its feed: the routes as audit.routes.ts declares them, answered by audit.handlers.ts. */
export function mountAudit(app: OpenAPIHono<AppEnv>, deps: AuditDeps) {
  const h = createAuditHandlers(deps);
  mount(app, routes.list, h.list);
  mount(app, routes.stream, h.stream);
}
