import type { RouteHandler } from "@hono/zod-openapi";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { isRefusal } from "../db/write.ts";
import { callerWrites, refused } from "../http/caller-write.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import { webhookUrl } from "./address.ts";
import { newSecret } from "./deliver.ts";
import { DELIVERIES_LIMIT_DEFAULT } from "./webhooks.routes.ts";
import type * as routes from "./webhooks.routes.ts";

export interface WebhookDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY" | "WEBHOOK_ALLOW_PRIVATE">;
}

/** The handlers run after the admin guard and the body's validation. */
export function createWebhookHandlers({ store, config }: WebhookDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
    const body = c.req.valid("json");
    const url = webhookUrl(body.url, config.WEBHOOK_ALLOW_PRIVATE);
    if (!url) return c.json({ error: MSG.invalidWebhook }, 400);
    const secret = newSecret();
    const created = await store.webhooks.create({
      url,
      actions: body.actions ? [...new Set(body.actions)] : null,
      description: body.description ?? null,
      secret,
    }, callerWrite(c));
    if (isRefusal(created)) return refused(c, created);
    if (created === "too_many") {
      return c.json({ error: MSG.tooManyWebhooks }, 400);
    }
    return c.json({ ...created, secret }, 201, {
      Location: `/api/webhooks/${created.id}`,
    });
  };

  const list: RouteHandler<typeof routes.list, AppEnv> = async (c) =>
    c.json(await store.webhooks.list(), 200);

  const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const found = id === null ? undefined : await store.webhooks.get(id);
    if (!found) return c.json({ error: MSG.webhookNotFound }, 404);
    return c.json(found, 200);
  };

  const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const outcome = id === null
      ? "not_found"
      : await store.webhooks.remove(id, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.webhookNotFound }, 404);
    }
    return c.json({ ok: true as const }, 200);
  };

  const deliveries: RouteHandler<typeof routes.deliveries, AppEnv> = async (
    c,
  ) => {
    const { id } = c.req.valid("param");
    const { limit } = c.req.valid("query");
    const attempts = id === null
      ? undefined
      : await store.webhooks.deliveries(id, limit ?? DELIVERIES_LIMIT_DEFAULT);
    if (!attempts) return c.json({ error: MSG.webhookNotFound }, 404);
    return c.json(attempts, 200);
  };

  const enable: RouteHandler<typeof routes.enable, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const outcome = id === null
      ? "not_found"
      : await store.webhooks.enable(id, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.webhookNotFound }, 404);
    }
    return c.json(outcome, 200);
  };

  return { create, list, get, remove, deliveries, enable };
}
