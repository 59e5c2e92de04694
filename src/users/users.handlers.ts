import type { RouteHandler } from "@hono/zod-openapi";
import type { Context, TypedResponse } from "hono";
import type { PasswordHasher } from "../auth/passwords.ts";
import type { CallerRefusal, Store, WriteCaller } from "../db/store.ts";
import type { AppEnv } from "../http/env.ts";
import { beforeWrite } from "../http/endpoint.ts";
import { ApiError } from "../http/errors.ts";
import { jsonArrayBody } from "../http/json-array.ts";
import { MSG } from "../http/messages.ts";
import type { User } from "./user.ts";
import type * as routes from "./users.routes.ts";

export interface UserDeps {
  store: Store;
  passwords: PasswordHasher;
}

/**
 * The caller as the write's transaction re-checks them, with the deadline's
 * last check right before the write itself.
 */
const writeCaller = (c: Context<AppEnv>): WriteCaller => ({
  id: c.get("caller").id,
  sessionHash: c.get("sessionHash"),
  beforeWrite: () => beforeWrite(c),
});

/**
 * A caller deleted, logged out or demoted while their request waited
 * answers as if it had arrived a moment later: 401, or 403.
 */
function refuseLostCaller<T>(outcome: T | CallerRefusal): T {
  if (outcome === "caller_gone") throw new ApiError(401, MSG.unauthorised);
  if (outcome === "caller_not_admin") throw new ApiError(403, MSG.forbidden);
  return outcome as T;
}

/**
 * The handlers run after the admin guard and the body's validation, so each
 * reads as the rest of the contract's list of checks, in order.
 */
export function createUserHandlers({ store, passwords }: UserDeps) {
  /** Streamed when long, so memory stays flat however many users there are. */
  const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
    const body = await jsonArrayBody(
      store.users.listJson(),
      (cause) =>
        c.get("log").error("list stream failed after the first byte", {
          requestId: c.get("requestId"),
          cause,
        }),
    );
    // The body is the contract's array, only written in pieces.
    return c.body(body, 200, {
      "Content-Type": "application/json",
    }) as unknown as TypedResponse<User[], 200, "json">;
  };

  const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    const user = id === null ? undefined : await store.users.get(id);
    if (!user) throw new ApiError(404, MSG.userNotFound);
    return c.json(user, 200);
  };

  const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
    const { password, ...fields } = c.req.valid("json");
    const passwordHash = await passwords.hash(password);
    beforeWrite(c);
    const created = refuseLostCaller(
      await store.users.create({ ...fields, passwordHash }, writeCaller(c)),
    );
    if (created === "duplicate") throw new ApiError(409, MSG.duplicateUser);
    return c.json(created, 201, { Location: `/api/users/${created.id}` });
  };

  const update: RouteHandler<typeof routes.update, AppEnv> = async (c) => {
    const { role, password } = c.req.valid("json");
    const { id } = c.req.valid("param");
    if (id === null) throw new ApiError(404, MSG.userNotFound);
    const passwordHash = password ? await passwords.hash(password) : undefined;
    beforeWrite(c);
    const updated = refuseLostCaller(
      await store.users.update(id, {
        role: role || undefined,
        passwordHash,
        keepSession: c.get("sessionHash"),
      }, writeCaller(c)),
    );
    if (updated === "not_found") throw new ApiError(404, MSG.userNotFound);
    return c.json(updated, 200);
  };

  const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
    const { id } = c.req.valid("param");
    if (id === c.get("caller").id) {
      throw new ApiError(400, MSG.cannotDeleteSelf);
    }
    if (id !== null) beforeWrite(c);
    const outcome = id === null
      ? "not_found"
      : refuseLostCaller(await store.users.remove(id, writeCaller(c)));
    if (outcome === "not_found") throw new ApiError(404, MSG.userNotFound);
    return c.json({ ok: true as const }, 200);
  };

  return { list, get, create, update, remove };
}
