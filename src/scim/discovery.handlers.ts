import type { Context } from "hono";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { listResponse, scimBase, sendScim } from "./answers.ts";
import type * as routes from "./discovery.routes.ts";
import {
  resourceTypeDocs,
  schemaDocs,
  serviceProviderConfig,
} from "./schema.ts";
import type { ScimDeps } from "./scim.handlers.ts";

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The discovery documents, each list and each one (discovery.routes.ts). */
export function createDiscoveryHandlers({ config }: Pick<ScimDeps, "config">) {
  const base = (c: Context<AppEnv>) => scimBase(c, config.TRUST_PROXY);
  const all = (c: Context<AppEnv>, docs: { id: string }[]) =>
    sendScim(c, 200, listResponse(docs.length, 1, docs));
  /** The one of `id` (the route's step found it). */
  const one = (c: Context<AppEnv>, docs: { id: string }[], id: string) =>
    sendScim(c, 200, docs.find((d) => d.id === id));

  const serviceProviderConfigHandler: Handler<"serviceProviderConfig"> = (
    c,
  ) => sendScim(c, 200, serviceProviderConfig(base(c)));

  const resourceTypes: Handler<"resourceTypes"> = (c) =>
    all(c, resourceTypeDocs(base(c)));

  const resourceType: Handler<"resourceType"> = (c, { name }) =>
    one(c, resourceTypeDocs(base(c)), name);

  const schemas: Handler<"schemas"> = (c) => all(c, schemaDocs(base(c)));

  const schema: Handler<"schema"> = (c, { uri }) =>
    one(c, schemaDocs(base(c)), uri);

  return {
    serviceProviderConfig: serviceProviderConfigHandler,
    resourceTypes,
    resourceType,
    schemas,
    schema,
  };
}
