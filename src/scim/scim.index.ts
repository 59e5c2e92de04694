import type { OpenAPIHono } from "@hono/zod-openapi";
import { mountAll } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type { StepDeps } from "../http/steps.ts";
import type { Context } from "hono";
import { scimErrorForm } from "./errors.ts";
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
  mountAll(app, routes, createScimHandlers(deps), steps);
}

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
