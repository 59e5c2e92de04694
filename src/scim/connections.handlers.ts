import type { Need } from "../auth/permissions.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import type * as routes from "./connections.routes.ts";
import { newScimToken } from "./token.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface ConnectionDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The handlers run after their routes' steps (connections.routes.ts). */
export function createConnectionHandlers({ store, config }: ConnectionDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const create: Handler<"create"> = async (c, { body }) => {
    const { token, tokenHash } = newScimToken();
    const created = await store.scim.connections.create(
      { name: body.name, adminGroups: body.adminGroups ?? [] },
      tokenHash,
      callerWrite(
        c,
        adminGroupsNeeds(body.adminGroups?.length ? body.adminGroups : null),
      ),
    );
    if (isRefusal(created)) return created;
    return c.json({ ...created, token }, 201);
  };

  const list: Handler<"list"> = async (c) =>
    c.json(await store.scim.connections.list(), 200);

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.scim.connections.get(id);
    return found ? c.json(found, 200) : refuse("not_found");
  };

  const update: Handler<"update"> = async (c, { id, body }) => {
    const updated = await store.scim.connections.update(id, {
      name: body.name ?? undefined,
      adminGroups: body.adminGroups ?? undefined,
    }, callerWrite(c, adminGroupsNeeds(body.adminGroups)));
    return isRefusal(updated) ? updated : c.json(updated, 200);
  };

  const remove: Handler<"remove"> = async (c, { id }) => {
    const outcome = await store.scim.connections.remove(id, callerWrite(c));
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  return { create, list, get, update, remove };
}

/**
 * `adminGroups` grant the built-in `admin`: only an admin acting with
 * every permission sets them (else 403 `Forbidden`, from the write).
 */
const adminGroupsNeeds = (
  adminGroups: readonly string[] | null | undefined,
): Need[] | undefined =>
  adminGroups === undefined || adminGroups === null
    ? undefined
    : ["scim:manage", "admin"];
