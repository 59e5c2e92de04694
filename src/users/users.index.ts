import type { OpenAPIHono } from "@hono/zod-openapi";
import { mount } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { createUserHandlers, type UserDeps } from "./users.handlers.ts";
import * as routes from "./users.routes.ts";

/** /api/users: each route as users.routes.ts declares it, answered by users.handlers.ts. */
export function mountUsers(app: OpenAPIHono<AppEnv>, deps: UserDeps) {
  const h = createUserHandlers(deps);
  mount(app, routes.list, h.list);
  mount(app, routes.get, h.get);
  mount(app, routes.create, h.create);
  mount(app, routes.update, h.update);
  mount(app, routes.remove, h.remove);
  mount(app, routes.disable, h.disable);
  mount(app, routes.enable, h.enable);
  mount(app, routes.listSessions, h.listSessions);
  mount(app, routes.endSessions, h.endSessions);
  mount(app, routes.endSession, h.endSession);
}
