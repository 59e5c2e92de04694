import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import { webhookUrl } from "./address.ts";
import { newSecret } from "./deliver.ts";
import { DELIVERIES_LIMIT_DEFAULT } from "./webhooks.routes.ts";
import type * as routes from "./webhooks.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface WebhookDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY" | "WEBHOOK_ALLOW_PRIVATE">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The handlers run after their routes' steps (webhooks.routes.ts). */
export function createWebhookHandlers({ store, config }: WebhookDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const create: Handler<"create"> = async (c, { body }) => {
    const url = webhookUrl(body.url, config.WEBHOOK_ALLOW_PRIVATE);
    if (!url) return refuse("target_refused");
    const secret = newSecret();
    const created = await store.webhooks.create({
      url,
      actions: body.actions ? [...new Set(body.actions)] : null,
      description: body.description ?? null,
      secret,
    }, callerWrite(c));
    if (isRefusal(created)) return created;
    return c.json({ ...created, secret }, 201, {
      Location: `/api/webhooks/${created.id}`,
    });
  };

  const list: Handler<"list"> = async (c) =>
    c.json(await store.webhooks.list(), 200);

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.webhooks.get(id);
    return found ? c.json(found, 200) : refuse("not_found");
  };

  const remove: Handler<"remove"> = async (c, { id }) => {
    const outcome = await store.webhooks.remove(id, callerWrite(c));
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  const deliveries: Handler<"deliveries"> = async (c, { id, query }) => {
    const attempts = await store.webhooks.deliveries(
      id,
      query.limit ?? DELIVERIES_LIMIT_DEFAULT,
    );
    return attempts ? c.json(attempts, 200) : refuse("not_found");
  };

  const enable: Handler<"enable"> = async (c, { id }) => {
    const outcome = await store.webhooks.enable(id, callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    return c.json(outcome, 200);
  };

  const test: Handler<"test"> = async (c, { id }) => {
    const deliveryId = await store.webhooks.test(id, callerWrite(c));
    if (isRefusal(deliveryId)) return deliveryId;
    return c.json({ deliveryId }, 202);
  };

  const retry: Handler<"retry"> = async (c, { id }) => {
    const outcome = await store.webhooks.retry(id, callerWrite(c));
    if (isRefusal(outcome)) return outcome;
    return c.json(outcome, 200);
  };

  return { create, list, get, remove, deliveries, enable, test, retry };
}
