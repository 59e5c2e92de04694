import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Sessions } from "../auth/session.ts";
import { jsonBody } from "../http/body.ts";
import { failsWith } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import { createUserHandlers, type UserDeps } from "./users.handlers.ts";
import * as routes from "./users.routes.ts";

/** Mounts /api/users: each route behind the admin guard, in the contract's order. */
export function mountUsers(
  app: OpenAPIHono<AppEnv>,
  deps: UserDeps & { sessions: Sessions },
) {
  const h = createUserHandlers(deps);
  const admin = deps.sessions.requireAdmin;
  app.openapi(
    { ...routes.list, middleware: [failsWith(MSG.listFailed), admin] },
    h.list,
  );
  app.openapi(
    { ...routes.get, middleware: [failsWith(MSG.getFailed), admin] },
    h.get,
  );
  app.openapi({
    ...routes.create,
    middleware: [
      failsWith(MSG.createFailed),
      admin,
      jsonBody({ malformed: "failure" }),
    ],
  }, h.create);
  app.openapi({
    ...routes.update,
    middleware: [failsWith(MSG.updateFailed), admin, jsonBody()],
  }, h.update);
  app.openapi(
    { ...routes.remove, middleware: [failsWith(MSG.deleteFailed), admin] },
    h.remove,
  );
}
