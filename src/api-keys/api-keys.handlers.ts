import { newApiKey } from "../auth/api-keys.ts";
import { PERMISSIONS, reachOf } from "../auth/permissions.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import type * as routes from "./api-keys.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface KeyDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The handlers run after their routes' steps (keys.routes.ts). */
export function createKeyHandlers({ store, config }: KeyDeps) {
  const writeOf = callerWrites(config.TRUST_PROXY);
  // A person's own keys need no permission of the route's (any they hold),
  // so none of its reach either.
  const callerWrite = (c: Parameters<typeof writeOf>[0]) =>
    writeOf(
      c,
      c.req.param("id") === String(c.get("caller").account.id) ? [] : undefined,
    );

  const create: Handler<"create"> = async (c, { id, body }) => {
    const { key, prefix, secretHash } = newApiKey();
    const created = await store.apiKeys.create(
      id,
      {
        name: body.name,
        expiresAt: body.expiresAt ?? null,
        prefix,
        secretHash,
        // In the catalogue's order, each once.
        permissions: body.permissions
          ? PERMISSIONS.filter((p) => body.permissions!.includes(p))
          : null,
        reachGroupId: body.reachGroupId ?? null,
      },
      callerWrite(c),
    );
    if (isRefusal(created)) return created;
    return c.json({ ...created, key }, 201);
  };

  const list: Handler<"list"> = async (c, { id }) => {
    const caller = c.get("caller");
    const reach = reachOf(caller.access, "keys:manage");
    if (
      id !== caller.account.id && reach !== "all" &&
      !await store.users.reached(id, reach)
    ) return refuse("not_found");
    const keys = await store.apiKeys.list(id);
    return keys ? c.json(keys, 200) : refuse("not_found");
  };

  const revoke: Handler<"revoke"> = async (c, { id, keyId }) => {
    const outcome = await store.apiKeys.revoke(id, keyId, callerWrite(c));
    return outcome === "revoked" ? c.json({ ok: true as const }, 200) : outcome;
  };

  return { create, list, revoke };
}
