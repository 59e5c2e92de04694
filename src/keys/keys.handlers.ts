import type { RouteHandler } from "@hono/zod-openapi";
import { newApiKey } from "../auth/keys.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { isRefusal } from "../db/write.ts";
import { callerWrites, refused } from "../http/caller-write.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import type { KeyRoutes } from "./keys.routes.ts";

export interface KeyDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
}

/** The handlers run after the admin guard (and, for create, the owner's 404 and the body). */
export function createKeyHandlers({ store, config }: KeyDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const create: RouteHandler<KeyRoutes["create"], AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const { name, expiresAt } = c.req.valid("json");
    const { key, prefix, secretHash } = newApiKey();
    const created = id === null ? "not_found" : await store.keys.create(
      id,
      { name, expiresAt: expiresAt ?? null, prefix, secretHash },
      callerWrite(c),
    );
    if (isRefusal(created)) return refused(c, created);
    switch (created) {
      case "not_found":
        return c.json({ error: MSG.userNotFound }, 404);
      case "too_many":
        return c.json({ error: MSG.tooManyApiKeys }, 400);
    }
    return c.json({ ...created, key }, 201);
  };

  const list: RouteHandler<KeyRoutes["list"], AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const keys = id === null ? undefined : await store.keys.list(id);
    if (!keys) return c.json({ error: MSG.userNotFound }, 404);
    return c.json(keys, 200);
  };

  const revoke: RouteHandler<KeyRoutes["revoke"], AppEnv> = async (c) => {
    const { id, keyId } = c.req.valid("param");
    const outcome = id === null || keyId === null
      ? "not_found"
      : await store.keys.revoke(id, keyId, callerWrite(c));
    if (isRefusal(outcome)) return refused(c, outcome);
    if (outcome === "not_found") {
      return c.json({ error: MSG.apiKeyNotFound }, 404);
    }
    return c.json({ ok: true as const }, 200);
  };

  return { create, list, revoke };
}
