import type { Context } from "hono";
import { type Permission, PERMISSIONS } from "../auth/permissions.ts";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { VersionedRole } from "../db/roles.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { canonicalKey } from "../users/canonical.ts";
import type * as routes from "./roles.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface RoleDeps {
  store: Store;
  config: Pick<Config, "TRUST_PROXY">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** A role's tag: its id and row version. */
export const roleTag = (id: number, version: number) => `"r${id}.${version}"`;

/** The versions `If-Match`'s tags name for this role (none: no tag of it). */
const versionsOf = (id: number, tags: string[]) =>
  tags.flatMap((t) => {
    const m = /^"r(\d+)\.([1-9][0-9]{0,9})"$/.exec(t);
    return m && Number(m[1]) === id ? [Number(m[2])] : [];
  });

/** The names given, in the catalogue's order, each once (knownPermissions has refused any other). */
const catalogued = (names: readonly string[]): Permission[] =>
  PERMISSIONS.filter((p) => names.includes(p));

/** The handlers run after their routes' steps (roles.routes.ts). */
export function createRoleHandlers({ store, config }: RoleDeps) {
  const callerWrite = callerWrites(config.TRUST_PROXY);
  /** The write re-checks `roles:manage` and what it grants. */
  const granting = (c: Context<AppEnv>, permissions: readonly Permission[]) =>
    callerWrite(c, ["roles:manage", ...permissions]);
  const withTag = ({ role, version }: VersionedRole) => ({
    role,
    headers: { ETag: roleTag(role.id, version) },
  });

  const list: Handler<"list"> = async (c) =>
    c.json(await store.roles.list(), 200);

  const create: Handler<"create"> = async (c, { body }) => {
    const permissions = catalogued(body.permissions ?? []);
    const created = await store.roles.create({
      name: body.name,
      nameKey: canonicalKey(body.name),
      description: body.description ?? "",
      permissions,
    }, granting(c, permissions));
    if (isRefusal(created)) return created;
    const { role, headers } = withTag(created);
    return c.json(role, 201, headers);
  };

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.roles.get(id);
    if (!found) return refuse("not_found");
    const { role, headers } = withTag(found);
    return c.json(role, 200, headers);
  };

  const update: Handler<"update"> = async (c, { body, id, ifMatch }) => {
    const permissions = body.permissions
      ? catalogued(body.permissions)
      : undefined;
    const updated = await store.roles.update(
      id,
      {
        name: body.name ?? undefined,
        nameKey: body.name ? canonicalKey(body.name) : undefined,
        description: body.description ?? undefined,
        permissions,
      },
      c.get("caller").access,
      granting(c, permissions ?? []),
      ifMatch && versionsOf(id, ifMatch),
    );
    if (isRefusal(updated)) return updated;
    const { role, headers } = withTag(updated);
    return c.json(role, 200, headers);
  };

  const remove: Handler<"remove"> = async (c, { id, ifMatch }) => {
    const outcome = await store.roles.remove(
      id,
      c.get("caller").access,
      callerWrite(c),
      ifMatch && versionsOf(id, ifMatch),
    );
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  const listAssignments: Handler<"listAssignments"> = async (c, { query }) =>
    c.json(await store.roles.assignments(query), 200);

  const assign: Handler<"assign"> = async (c, { body }) => {
    const created = await store.roles.assign(
      body.roleId,
      body.userId === undefined
        ? { groupId: body.groupId as number }
        : { userId: body.userId },
      body.reachGroupId ?? null,
      c.get("caller").access,
      callerWrite(c),
    );
    return isRefusal(created) ? created : c.json(created, 201);
  };

  const unassign: Handler<"unassign"> = async (c, { id }) => {
    const outcome = await store.roles.unassign(id, callerWrite(c));
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  return {
    list,
    create,
    get,
    update,
    remove,
    listAssignments,
    assign,
    unassign,
  };
}
