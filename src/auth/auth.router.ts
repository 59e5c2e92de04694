import type { OpenAPIHono } from "@hono/zod-openapi";
import { jsonBody } from "../http/body.ts";
import { failsWith } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import { type AuthDeps, createAuthHandlers } from "./auth.handlers.ts";
import * as routes from "./auth.routes.ts";

/** Mounts /api/auth. */
export function mountAuth(app: OpenAPIHono<AppEnv>, deps: AuthDeps) {
  const h = createAuthHandlers(deps);
  const { sessions } = deps;
  app.openapi({
    ...routes.login,
    middleware: [failsWith(MSG.loginFailed), sessions.sameOrigin, jsonBody()],
  }, h.login);
  app.openapi({
    ...routes.logout,
    middleware: [failsWith(MSG.internal), sessions.sameOrigin],
  }, h.logout);
  app.openapi({
    ...routes.me,
    middleware: [failsWith(MSG.internal), sessions.authenticate],
  }, h.me);
}
