import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { health } from "./health.ts";
import type { AppEnv } from "./http/env.ts";
import { mount } from "./http/endpoint.ts";
import { json, route } from "./http/openapi.ts";
import type { StepDeps } from "./http/steps.ts";

const HomeSchema = z.object({
  console: z.string().openapi({ example: "/admin" }),
  docs: z.string().openapi({ example: "/docs" }),
  openapi: z.string().openapi({ example: "/openapi.json" }),
  health: z.string().openapi({ example: "/health" }),
}).openapi("Home");

export const home = route({
  operationId: "home",
  method: "get",
  path: "/",
  tags: ["service"],
  security: [],
  summary:
    "Where to start: the console, the documentation, the OpenAPI document, health",
  description:
    "No authentication, no database. The paths of the admin console (`/admin`), of Swagger UI (`/docs`), of this document and of `GET /health`.",
  responses: {
    200: json(HomeSchema, "The service's entry points"),
  },
  steps: [],
});

/** `GET /`: what someone who opens the service's address can go on to. */
export function mountHome(
  app: OpenAPIHono<AppEnv>,
  paths: { console: string; docs: string; openapi: string },
  steps: StepDeps,
) {
  const body = { ...paths, health: health.path };
  mount(app, home, (c) => c.json(body, 200), steps);
}
