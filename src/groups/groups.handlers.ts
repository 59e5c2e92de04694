import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { MembersChange } from "../db/groups.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import type * as routes from "./groups.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface GroupDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The handlers run after their routes' steps (groups.routes.ts). */
export function createGroupHandlers({ store, config }: GroupDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const list: Handler<"list"> = async (c) =>
    c.json(await store.groups.list(), 200);

  const create: Handler<"create"> = async (c, { body }) => {
    const created = await store.groups.create({
      displayName: body.displayName,
      externalId: body.externalId ?? null,
    }, callerWrite(c));
    return isRefusal(created) ? created : c.json(created, 201);
  };

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.groups.get(id);
    return found ? c.json(found, 200) : refuse("not_found");
  };

  const update: Handler<"update"> = async (c, { body, id }) => {
    const updated = await store.groups.update(id, body, callerWrite(c));
    return isRefusal(updated) ? updated : c.json(updated, 200);
  };

  const remove: Handler<"remove"> = async (c, { id }) => {
    const outcome = await store.groups.remove(id, callerWrite(c));
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  const members = (how: MembersChange) =>
  async (
    c: Context<AppEnv>,
    { body, id }: { body: { userIds: number[] }; id: number },
  ) => {
    const changed = await store.groups.members(
      id,
      how,
      body.userIds,
      c.get("caller").access,
      callerWrite(c),
    );
    return isRefusal(changed) ? changed : c.json(changed, 200);
  };

  const setMembers: Handler<"setMembers"> = members("replace");
  const addMembers: Handler<"addMembers"> = members("add");
  const removeMembers: Handler<"removeMembers"> = members("remove");

  return {
    list,
    create,
    get,
    update,
    remove,
    setMembers,
    addMembers,
    removeMembers,
  };
}
