import { OpenAPIHono } from "@hono/zod-openapi";
import { NO_DEADLINE } from "../db/write.ts";
import { mountAll } from "../http/endpoint.ts";
import type { Deadline } from "../http/request.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import type { Context } from "hono";
import { scimErrorForm } from "./errors.ts";
import { createBulkHandlers, type ServeSingle } from "./bulk.handlers.ts";
import * as bulkRoutes from "./bulk.routes.ts";
import { createUserBatch } from "./bulk-users.ts";
import * as connectionRoutes from "./connections.routes.ts";
import { createConnectionHandlers } from "./connections.handlers.ts";
import { createDiscoveryHandlers } from "./discovery.handlers.ts";
import * as discoveryRoutes from "./discovery.routes.ts";
import { createListHandlers } from "./lists.handlers.ts";
import * as listRoutes from "./lists.routes.ts";
import { createScimHandlers, type ScimDeps } from "./scim.handlers.ts";
import * as routes from "./scim.routes.ts";

/**
 * Provisioning: `/api/scim/connections` (admins) and `/scim/v2` (identity
 * providers, with a connection's token), each route as its routes module
 * declares it.
 */
export function mountScim(
  app: OpenAPIHono<AppEnv>,
  deps: ScimDeps,
  steps: StepDeps,
) {
  app.openAPIRegistry.registerComponent("securitySchemes", "scimAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "usc_ provisioning token",
    description:
      "A provisioning connection's token (`usc_` and 43 base64url characters) from `POST /api/scim/connections`, sent as `Authorization: Bearer usc_...`. Valid for `/scim/v2` only (`/api` answers it 401).",
  });
  mountAll(app, connectionRoutes, createConnectionHandlers(deps), steps);
  mountAll(app, discoveryRoutes, createDiscoveryHandlers(deps), steps);
  mountAll(app, listRoutes, createListHandlers(deps), steps);
  const handlers = createScimHandlers(deps);
  mountAll(app, routes, handlers, steps);
  mountAll(
    app,
    bulkRoutes,
    createBulkHandlers({
      config: deps.config,
      serve: singleRequests(handlers, steps),
      users: createUserBatch(deps),
    }),
    steps,
  );
}

/**
 * The single requests a Bulk's operations stand for, served by the same
 * routes and handlers apart from the app's middleware (the Bulk request
 * was counted once). A Bulk's operations are writes only (bulk.ts).
 */
function singleRequests(
  handlers: ReturnType<typeof createScimHandlers>,
  steps: StepDeps,
): ServeSingle {
  const single = new OpenAPIHono<AppEnv>({ strict: true });
  mountAll(single, routes, handlers, steps);
  return (req, env) => single.fetch(req, env);
}

/**
 * The request deadline, but for a Bulk: each of its operations has the
 * deadline its single request has, and the whole is bounded by
 * maxOperations instead.
 */
export const exceptBulk = (deadline: Deadline): Deadline => (c, serve) => {
  if (c.req.method === "POST" && c.req.path === bulkRoutes.bulk.path) {
    c.set("writeBy", NO_DEADLINE);
    return Promise.resolve(serve(c));
  }
  return deadline(c, serve);
};

/** Where identity providers speak SCIM. */
const SCIM_BASE = "/scim/v2";

/**
 * A request under `/scim/v2` that no route takes (an unknown resource or
 * method) is answered in SCIM's error form too: an identity provider reads
 * nothing else.
 */
export function answersInScimForm(c: Context<AppEnv>) {
  const path = c.req.path;
  if (path === SCIM_BASE || path.startsWith(`${SCIM_BASE}/`)) {
    c.set("errorForm", scimErrorForm);
  }
}
