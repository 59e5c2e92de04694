import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { Deadline } from "../http/request.ts";
import type { StepDeps } from "../http/steps.ts";
import { createSsoHandlers, type SsoDeps } from "./sso.handlers.ts";
import * as routes from "./sso.routes.ts";

/**
 * /api/sso: the identity providers (admins) and the sign-in through one
 * (anyone), as sso.routes.ts declares them, answered by sso.handlers.ts.
 * The public list comes before `/api/sso/providers/{id}`, which would take
 * `public` for an id.
 */
export function mountSso(
  app: OpenAPIHono<AppEnv>,
  deps: SsoDeps,
  steps: StepDeps,
) {
  mountAll(app, routes, createSsoHandlers(deps), steps);
}

const SIGN_IN = /^\/api\/sso\/[^/]+\/(start|callback)$/;

/**
 * A sign-in waits for its identity provider up to SSO_TIMEOUT_MS for each
 * call (discovery, then the code's exchange and the keys): its own,
 * longer deadline; every other request keeps the service's.
 */
export const withSignInDeadline =
  (deadline: Deadline, signIn: Deadline): Deadline => (c, serve) =>
    c.req.method === "GET" && SIGN_IN.test(c.req.path)
      ? signIn(c, serve)
      : deadline(c, serve);
