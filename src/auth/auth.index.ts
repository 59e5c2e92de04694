import type { OpenAPIHono } from "@hono/zod-openapi";
import { mount } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { type AuthDeps, createAuthHandlers } from "./auth.handlers.ts";
import * as routes from "./auth.routes.ts";

/** /api/auth: each route as auth.routes.ts declares it, answered by auth.handlers.ts. */
export function mountAuth(app: OpenAPIHono<AppEnv>, deps: AuthDeps) {
  const h = createAuthHandlers(deps);
  mount(app, routes.login, h.login);
  mount(app, routes.logout, h.logout);
  mount(app, routes.me, h.me);
}
